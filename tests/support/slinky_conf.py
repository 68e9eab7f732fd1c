"""The Slurm configuration the Slinky operator v1.2.1 generates from the custom resources the
`slurm` chart renders: slurm.conf, the config files it serves configless, and the `--conf` string
each slurmd of a NodeSet is started with. The test cluster (local_slurm.py) runs exactly this.

Read from SlinkyProject/slurm-operator at tag v1.2.1:
- internal/builder/controllerbuilder/controller_config.go: buildSlurmConf (sections, keys, the
  NodeSet/partition lines, extra config, the merged SlurmctldParameters/AuthInfo/AuthAltParameters),
  buildCgroupConf (written only when no config file is named cgroup.conf).
- internal/builder/common/const.go: ports, users, directories, auth/slurm + cred/slurm + auth/jwt.
- internal/builder/common/common.go: BuildMergedConfig (a key also set in the extra config gets the
  union of both value lists, sorted), GetSlurmNodeSetName.
- internal/builder/workerbuilder/worker_app.go: slurmdArgs/slurmdConfArgs (`-Z --conf-server
  host:port --conf 'Features=<nodeset> <extraConf items>'`, keys title-cased, sorted) and the
  preStop hook that sets the node DOWN.
- api/v1beta1/controller_keys.go: ClusterName (<namespace>_<name> unless set); Key (the
  controller's StatefulSet and Service, <name>-controller), PrimaryName (its pod, Key + "-0") and
  ServiceFQDNShort (<Key>.<namespace>, internal/utils/domainname/domainname.go FqdnShort), which
  controller_config.go joins into SlurmctldHost=<PrimaryName>(<ServiceFQDNShort>) and
  common/common.go ConfiglessArgs makes every slurmd's and sackd's `--conf-server`.
- Accounting: controller_config.go's ACCOUNTING section (for a Controller whose accountingRef names
  an Accounting: AccountingStorageType=accounting_storage/slurmdbd, AccountingStorageHost=<the
  Accounting's ServiceKey name>, AccountingStoragePort=6819); accountingbuilder/accounting_config.go
  buildSlurmdbdConf (slurmdbd.conf's sections and keys, StoragePass read from passwordKeyRef);
  api/v1beta1/accounting_keys.go (Key and ServiceKey <name>-accounting, PrimaryName <Key>-0, the
  slurmdbd pod's hostname and DbdHost); accounting_types.go StorageConfig (port 3306 and database
  slurm_acct_db by default); accountingbuilder/accounting_app.go (slurmdbd as the slurm user, with
  slurmdbd.conf, slurm.key and jwt.key under /etc/slurm, mode 0600).
- Prolog and epilog scripts: controller_config.go BuildControllerConfig reads the key names of each
  ConfigMap a prologScriptRefs (epilogScriptRefs, prologSlurmctldScriptRefs,
  epilogSlurmctldScriptRefs) entry names, and buildSlurmConf writes, after ACCOUNTING, a
  `### SLURMCTLD PROLOG & EPILOG ###` section (buildPrologEpilogSlurmctldConf:
  PrologSlurmctld=/etc/slurm/<key>, sorted) and a `### PROLOG & EPILOG ###` section
  (buildPrologEpilogConf: Prolog=<key>, Epilog=<key>, sorted, the bare name: a path relative to
  slurm.conf, which configless slurmctld sends to each slurmd with its configs);
  controller_app.go mounts those ConfigMaps into the controller's /etc/slurm (controllerVolumes:
  one projected volume, DefaultMode 0610).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

SLURM_USER = "slurm"
SLURMD_USER = "root"
SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818
SLURMDBD_PORT = 6819
SLURMD_SPOOL = "/var/spool/slurmd"
SLURMCTLD_SPOOL = "/var/spool/slurmctld"
LOG_DIR = "/var/log/slurm"
ETC_DIR = "/etc/slurm"
# The operator's preStop hook (worker_app.go): what a replaced pod's node shows until it re-registers.
PRESTOP_REASON = "slurm-operator: Pod is terminating"


def _merge_keys(extra_conf: str) -> dict[str, str]:
    """Last value of each single-valued `Key=value` line (keys lower-cased), as the operator parses
    the extra config to merge its own parameter lists into it."""
    found: dict[str, str] = {}
    logical = ""
    for raw in extra_conf.split("\n"):
        line = raw.split("#", 1)[0].rstrip(" \t\r")
        if not line:
            continue
        if line.endswith("\\"):
            logical += line[:-1]
            continue
        key, sep, value = (logical + line).strip().partition("=")
        logical = ""
        if sep and key.strip() and value.strip() and not any(c in value.strip() for c in " \n"):
            found[key.strip().lower()] = value.strip()
    return found


def merged_config(extra_conf: str, defaults: dict[str, list[str]]) -> list[str]:
    """Lines for the keys the operator sets itself and the extra config also sets."""
    given = _merge_keys(extra_conf)
    lines = []
    for key in sorted(defaults):
        if key.lower() not in given:
            continue
        values = set(defaults[key])
        seen = {v.split("=", 1)[0].lower() for v in values}
        for v in given[key.lower()].split(","):
            if v and v.split("=", 1)[0].lower() not in seen:
                values.add(v.lower())
                seen.add(v.split("=", 1)[0].lower())
        lines.append(f"{key}={','.join(sorted(values))}")
    return lines


def nodeset_name(nodeset: dict) -> str:
    # The chart sets the pod template's hostname to "<nodeset>-"; the operator appends the ordinal.
    hostname = nodeset["spec"].get("template", {}).get("spec", {}).get("hostname", "")
    if hostname:
        return hostname.split()[0].strip("-")
    return nodeset["metadata"]["name"]


def controller_name(controller: dict) -> str:
    return (
        controller["spec"].get("clusterName")
        or f"{controller['metadata']['namespace']}_{controller['metadata']['name']}"
    )


@dataclass(frozen=True)
class Release:
    """The objects of one rendered `slurm` release the operator reads."""

    controller: dict
    nodesets: list[dict]
    config_maps: dict[str, dict]
    accountings: dict[str, dict] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_documents(cls, docs: list[dict]) -> "Release":
        controllers = [d for d in docs if d.get("kind") == "Controller"]
        if len(controllers) != 1:
            raise ValueError(f"expected one Controller in the release, found {len(controllers)}")
        return cls(
            controllers[0],
            [d for d in docs if d.get("kind") == "NodeSet"],
            {d["metadata"]["name"]: d for d in docs if d.get("kind") == "ConfigMap"},
            {d["metadata"]["name"]: d for d in docs if d.get("kind") == "Accounting"},
        )

    @property
    def accounting(self) -> dict | None:
        """The Accounting the Controller's accountingRef names: the operator writes the ACCOUNTING
        lines only when it finds it (BuildControllerConfig ignores a ref that is not found)."""
        ref = self.controller["spec"].get("accountingRef")
        return self.accountings.get(ref["name"]) if ref else None

    @property
    def accounting_key(self) -> str:
        """The Accounting's StatefulSet and Service name (Key, ServiceKey): <name>-accounting."""
        return f"{self.accounting['metadata']['name']}-accounting"

    @property
    def accounting_host(self) -> str:
        """slurmdbd's pod hostname (PrimaryName) and DbdHost: <Key>-0."""
        return f"{self.accounting_key}-0"

    def storage(self) -> dict:
        """The Accounting's storageConfig with the CRD's defaults (port 3306, slurm_acct_db)."""
        config = dict(self.accounting["spec"].get("storageConfig") or {})
        config.setdefault("port", 3306)
        config.setdefault("database", "slurm_acct_db")
        return config

    def slurmdbd_conf(self, storage_pass: str) -> str:
        """slurmdbd.conf as buildSlurmdbdConf writes it, the password read from the Secret that
        storageConfig.passwordKeyRef names (here: given)."""
        spec, storage = self.accounting["spec"], self.storage()
        merge = {"AuthInfo": ["use_client_ids"], "AuthAltParameters": [f"jwt_key={ETC_DIR}/jwt.key"]}
        if spec.get("jwksKeyRef"):
            raise ValueError("the test cluster does not model the Accounting's jwksKeyRef")
        lines = [
            "#",
            "### GENERAL ###",
            f"DbdHost={self.accounting_host}",
            f"DbdPort={SLURMDBD_PORT}",
            f"SlurmUser={SLURM_USER}",
            "#",
            "### PLUGINS & PARAMETERS ###",
            "AuthType=auth/slurm",
            "AuthAltTypes=auth/jwt",
            f"AuthAltParameters={','.join(merge['AuthAltParameters'])}",
            f"AuthInfo={','.join(merge['AuthInfo'])}",
            "#",
            "### STORAGE ###",
            "StorageType=accounting_storage/mysql",
            f"StorageHost={storage['host']}",
            f"StoragePort={storage['port']}",
            f"StorageUser={storage.get('username', '')}",
            f"StorageLoc={storage['database']}",
            f"StoragePass={storage_pass}",
            "#",
            "### LOGGING ###",
            "LogFile=/dev/null",
        ]
        extra = spec.get("extraConf", "")
        if extra:
            lines += ["#", "### EXTRA CONFIG ###", extra]
        if merged := merged_config(extra, merge):
            lines += ["#", "### MERGED CONFIG ###", *merged]
        return "\n".join(lines) + "\n"

    # The Controller's script references and the slurm.conf key each one's files become.
    SCRIPT_REFS = {
        "prologSlurmctldScriptRefs": "PrologSlurmctld",
        "epilogSlurmctldScriptRefs": "EpilogSlurmctld",
        "prologScriptRefs": "Prolog",
        "epilogScriptRefs": "Epilog",
    }

    def _ref_files(self, refs: str) -> dict[str, str]:
        files: dict[str, str] = {}
        for ref in self.controller["spec"].get(refs) or []:
            files.update(self.config_maps[ref["name"]].get("data", {}))
        return files

    @property
    def scripts(self) -> dict[str, str]:
        """Every prolog and epilog script the Controller's refs name, file name -> content: the
        operator mounts them into the controller's /etc/slurm beside slurm.conf."""
        files: dict[str, str] = {}
        for refs in self.SCRIPT_REFS:
            files.update(self._ref_files(refs))
        return files

    def script_lines(self) -> list[str]:
        """buildSlurmConf's two script sections (each only when it has a line)."""
        lines: list[str] = []
        for title, keys in (
            ("SLURMCTLD PROLOG & EPILOG", ("prologSlurmctldScriptRefs", "epilogSlurmctldScriptRefs")),
            ("PROLOG & EPILOG", ("prologScriptRefs", "epilogScriptRefs")),
        ):
            section = []
            for refs in keys:
                key = self.SCRIPT_REFS[refs]
                for name in sorted(self._ref_files(refs)):
                    section.append(f"{key}={ETC_DIR}/{name}" if "Slurmctld" in key else f"{key}={name}")
            if section:
                lines += ["#", f"### {title} ###", *section]
        return lines

    @property
    def config_files(self) -> dict[str, str]:
        """The controller's configFileRefs, file name -> content (served configless)."""
        files: dict[str, str] = {}
        for ref in self.controller["spec"].get("configFileRefs") or []:
            files.update(self.config_maps[ref["name"]].get("data", {}))
        return files

    def cgroup_conf(self) -> str | None:
        """The operator's own cgroup.conf, or None when a config file provides one."""
        if "cgroup.conf" in self.config_files:
            return None
        return "CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n"

    @property
    def controller_key(self) -> str:
        """The controller's StatefulSet and Service name (Key): <name>-controller."""
        return f"{self.controller['metadata']['name']}-controller"

    @property
    def primary_host(self) -> str:
        """slurmctld's pod hostname (PrimaryName): the StatefulSet's one pod, <Key>-0."""
        return f"{self.controller_key}-0"

    @property
    def service_host(self) -> str:
        """The controller Service's short FQDN <Key>.<namespace> (ServiceFQDNShort): workers' and
        logins' conf server."""
        return f"{self.controller_key}.{self.controller['metadata']['namespace']}"

    def slurm_conf(self) -> str:
        """slurm.conf as buildSlurmConf writes it."""
        spec = self.controller["spec"]
        cluster = controller_name(self.controller)
        merge = {
            "SlurmctldParameters": ["enable_configless", "reconfig_on_restart"],
            "AuthInfo": ["use_client_ids"],
            "AuthAltParameters": [f"jwt_key={ETC_DIR}/jwt.key"],
        }
        lines = [
            "#",
            "### GENERAL ###",
            f"ClusterName={cluster}",
            f"SlurmUser={SLURM_USER}",
            f"SlurmctldHost={self.primary_host}({self.service_host})",
            f"SlurmctldPort={SLURMCTLD_PORT}",
            f"StateSaveLocation={SLURMCTLD_SPOOL}/{cluster}",
            f"SlurmdUser={SLURMD_USER}",
            f"SlurmdPort={SLURMD_PORT}",
            f"SlurmdSpoolDir={SLURMD_SPOOL}",
            "MaxNodeCount=1024",
            "#",
            "### LOGGING ###",
            f"SlurmctldLogFile={LOG_DIR}/slurmctld.log",
            f"SlurmSchedLogFile={LOG_DIR}/slurmctld.log",
            f"SlurmdLogFile={LOG_DIR}/slurmd.log",
            "#",
            "### PLUGINS & PARAMETERS ###",
            "AuthType=auth/slurm",
            "CredType=cred/slurm",
            "AuthAltTypes=auth/jwt",
            f"AuthAltParameters={','.join(merge['AuthAltParameters'])}",
            f"AuthInfo={','.join(merge['AuthInfo'])}",
            f"SlurmctldParameters={','.join(merge['SlurmctldParameters'])}",
        ]
        if (spec.get("metrics") or {}).get("enabled"):
            # controller_config.go buildSlurmConf: Spec.Metrics.Enabled adds this one line, after
            # SlurmctldParameters, before the ACCOUNTING section (slurm-operator v1.2.1).
            lines.append("MetricsType=metrics/openmetrics")
        lines += ["#", "### ACCOUNTING ###"]
        if self.accounting is not None:
            lines += [
                "AccountingStorageType=accounting_storage/slurmdbd",
                f"AccountingStorageHost={self.accounting_key}",
                f"AccountingStoragePort={SLURMDBD_PORT}",
            ]
        else:
            lines.append("AccountingStorageType=accounting_storage/none")
        lines += self.script_lines()
        nodesets = []
        for nodeset in sorted(self.nodesets, key=lambda n: n["metadata"]["name"]):
            ns = nodeset_name(nodeset)
            nodesets.append(f"NodeSet={ns} Feature={ns}")
            partition = nodeset["spec"].get("partition") or {}
            if partition.get("enabled"):
                nodesets.append(f"PartitionName={ns} Nodes={ns} {partition.get('config', '')}")
        if nodesets:
            lines += ["#", "### NODESET & PARTITION ###", *nodesets]
        extra = spec.get("extraConf", "")
        if extra:
            lines += ["#", "### EXTRA CONFIG ###", extra]
        if merged := merged_config(extra, merge):
            lines += ["#", "### MERGED CONFIG ###", *merged]
        return "\n".join(lines) + "\n"


def slurmd_conf(nodeset: dict) -> str:
    """The value of slurmd's `--conf` for a NodeSet's pods: Features=<nodeset> plus the NodeSet's
    extraConf items, keys title-cased, repeated keys joined with ',', items sorted."""
    items = {"Features": nodeset_name(nodeset)}
    extra = nodeset["spec"].get("extraConf", "")
    for item in extra.split(" ") if extra else []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"malformed NodeSet extraConf item {item!r}")
        key = key[:1].upper() + key[1:].lower()
        if key in ("Feature", "Features"):
            key = "Features"
        items[key] = f"{items[key]},{value}" if key in items else value
    return " ".join(sorted(f"{k}={v}" for k, v in items.items()))
