"""Pure builders of what the cluster is given: every chart's values, every pod spec and the files the program writes (slurm.conf lines, cluster.env, passwd entries, scrape configs, dashboards)."""
