"""The cluster's scheduling policy: the slurm.conf lines that make it a shared cluster with fair
share, put into the Slurm release's controller.extraConfMap (model/builders/slurm_values.py), where the
operator appends them to slurm.conf (its EXTRA CONFIG section). Pure functions.

Job priority under priority/multifactor (https://slurm.schedmd.com/priority_multifactor.html,
SchedMD/slurm doc/html/priority_multifactor.shtml at slurm-26-05-3-1) is a sum of factors, each
between 0.0 and 1.0, times its weight (unsigned 32-bit integers, so a priority stays within
4294967295). The weights here:
- fair share, 10000: the factor falls as an association uses more than its share of the cluster
  (shares: model/builders/accounting.py, every account and user 1), so whoever has used the least recently
  runs first; the term that decides.
- age, 1000: grows with queue time up to PriorityMaxAge (7 days, Slurm's default), so a job of a
  heavy user still rises: waiting the full week is worth a tenth of the fair-share span.
- QOS, 1000: the QOS factor is the job's QOS priority over the highest QOS priority; the default
  QOS `normal` has priority 0, so it counts only once an admin makes a QOS with a priority
  (docs/operations.md, "Accounting and fair-share").
- job size, partition and association: 0 (Slurm's default), as is every other weight.
Usage decays with a half-life of PriorityDecayHalfLife (7 days by default, Slurm's own), so last
week's big run counts half.

AccountingStorageEnforce=associations,limits,qos: no job runs without an association (a user the
registration has not added is refused at submit), association and QOS limits apply, and a job must
ask for a QOS its association may use (slurm.conf(5), SchedMD/slurm doc/man/man5/slurm.conf.5 at
slurm-26-05-3-1). AccountingStorageTRES=gres/gpu records each job's GPUs beside the default TRES, so
sacct and sreport say who used which GPUs (same page, AccountingStorageTRES: the defaults "cannot
be disabled, but only appended to"). PriorityWeightFairshare and PriorityWeightAge need
AccountingStorageType=accounting_storage/slurmdbd: the policy goes with accounting.
"""

from __future__ import annotations

from dataclasses import dataclass

# Each weight at most this, so their sum never nears the 32-bit priority's ceiling.
MAX_WEIGHT = 1_000_000
# PriorityDecayHalfLife in whole days; 0 (no decay) would need PriorityUsageResetPeriod set too.
HALF_LIFE_DAYS = (1, 365)
ENFORCE = ("associations", "limits", "qos")


@dataclass(frozen=True)
class SchedulingPolicy:
    weight_fairshare: int  # priorityWeightFairshare
    weight_age: int  # priorityWeightAge
    weight_qos: int  # priorityWeightQos
    decay_half_life_days: int  # priorityDecayHalfLifeDays


DEFAULT = SchedulingPolicy(weight_fairshare=10000, weight_age=1000, weight_qos=1000, decay_half_life_days=7)


def slurm_conf(policy: SchedulingPolicy) -> dict[str, list[str]]:
    """The policy's slurm.conf keys as the chart's extraConfMap takes them: each `Key=<list joined
    with ','>` (slurm._toList, helm/slurm/templates/_helpers.tpl at chart 1.2.1)."""
    return {
        "PriorityType": ["priority/multifactor"],
        "PriorityWeightFairshare": [str(policy.weight_fairshare)],
        "PriorityWeightAge": [str(policy.weight_age)],
        "PriorityWeightQOS": [str(policy.weight_qos)],
        "PriorityDecayHalfLife": [f"{policy.decay_half_life_days}-0"],
        "AccountingStorageEnforce": list(ENFORCE),
        "AccountingStorageTRES": ["gres/gpu"],
    }
