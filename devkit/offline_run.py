"""Run the real __main__.py under Pulumi's mocks, as `pulumi preview/up` would, and record the
resource graph: every registration with its inputs, parent, provider and dependency edges.

What the CLI does and mocks do not (https://www.pulumi.com/docs/iac/concepts/config/,
https://www.pulumi.com/docs/iac/guides/testing/unit/): Pulumi.yaml defaults are applied
here, stack values win, `secure:` values get test plaintext. AWS invokes are answered by an
account model (devkit/offline_account.py: zones, offerings, quotas, caller, refused permissions).
Resource references are rewritten to
URN strings before the mock monitor sees them (a plain MockMonitor rehydrates them on an executor
thread and fails intermittently with "attached to a different loop").

devkit/plan.py is built on this run and the tests assert on the same Graph.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import importlib
import json
import logging
import pathlib
import runpy
import sys
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

import pulumi
import yaml
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockCallArgs, MockMonitor
from pulumi.runtime.proto import provider_pb2
from pulumi.runtime.sync_await import _sync_await

from devkit import offline_account

PROJECT_DIR = pathlib.Path(__file__).resolve().parent.parent
SECRET_SIG = rpc._special_secret_sig
_SIG_KEY = rpc._special_sig_key

LOGIN_HOSTNAME = "k8s-slurm-slurmlog-0a1b2c3d4e-0123456789abcdef.elb.us-west-2.amazonaws.com"
IMAGE_DIGEST = "sha256:" + "ab" * 32


def built_image_digest(context_digest: str) -> str:
    """The digest the mocks' in-region build (ImageBuildRun, components/_parts/image_build_run.py)
    answers for a build context: the mock's own, derived from the context's digest so that another
    context gives another image, as a real build would; no registry computed it."""
    return "sha256:" + hashlib.sha256(f"mock-build:{context_digest}".encode()).hexdigest()


def _build_run(args: pulumi.runtime.MockResourceArgs) -> dict:
    """What a finished ImageBuildRun holds: the pushed digest, CodeBuild's build id
    (<project>:<uuid>, CodeBuild API Reference, Build.id:
    https://docs.aws.amazon.com/codebuild/latest/APIReference/API_Build.html) and the console link
    to its log (LogsLocation.deepLink)."""
    context = args.inputs.get("context_digest", "")
    build = f"{args.inputs.get('project_name')}:{uuid.uuid5(uuid.NAMESPACE_URL, context)}"
    return {
        "digest": built_image_digest(context),
        "build_id": build,
        "log_url": "https://console.aws.amazon.com/cloudwatch/home?region=us-west-2#logsV2:log-groups/"
        f"log-group/{args.inputs.get('log_group_name')}",
    }


def _yaml(path: pathlib.Path) -> Any:
    # libyaml where PyYAML has it: the CLI reads these files in Go, so their parsing should not
    # weigh on the evaluation the benchmark measures.
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def stack_config(stack: str = "dev", overrides: dict[str, Any] | None = None) -> dict[str, str]:
    """Config as the CLI hands it to the program: project defaults, then the stack's values,
    then overrides (a value of None removes a key). Values are strings; lists/maps are JSON."""
    project = _yaml(PROJECT_DIR / "Pulumi.yaml")
    name = project["name"]

    def enc(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        return v if isinstance(v, str) else json.dumps(v)

    cfg: dict[str, str] = {}
    for key, decl in (project.get("config") or {}).items():
        full = key if ":" in key else f"{name}:{key}"
        if isinstance(decl, dict) and ("default" in decl or "value" in decl):
            cfg[full] = enc(decl.get("default", decl.get("value")))
    stack_file = _yaml(PROJECT_DIR / f"Pulumi.{stack}.yaml") or {}
    for key, v in (stack_file.get("config") or {}).items():
        cfg[key] = "test-secret-plaintext" if isinstance(v, dict) and set(v) == {"secure"} else enc(v)
    for key, v in (overrides or {}).items():
        full = key if ":" in key else f"{name}:{key}"
        if v is None:
            cfg.pop(full, None)
        else:
            cfg[full] = enc(v)
    return cfg


@dataclass
class Resource:
    urn: str
    type: str
    name: str
    custom: bool
    remote: bool
    parent: str
    provider: str
    dependencies: list[str]
    property_dependencies: dict[str, list[str]]
    inputs: dict = field(default_factory=dict)  # secrets unwrapped; see secret_inputs
    secret_inputs: set[str] = field(default_factory=set)
    read: bool = False
    retain_on_delete: bool = False
    deleted_with: str = ""
    # The inputs whose changes `up` ignores (ResourceOptions.ignore_changes), as registered.
    ignore_changes: list[str] = field(default_factory=list)


def _refs_to_urns(value: struct_pb2.Value) -> None:
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        fields = value.struct_value.fields
        if _SIG_KEY in fields and fields[_SIG_KEY].string_value == rpc._special_resource_sig:
            value.string_value = fields["urn"].string_value
            return
        for v in fields.values():
            _refs_to_urns(v)
    elif kind == "list_value":
        for v in value.list_value.values:
            _refs_to_urns(v)


class RecordingMonitor(MockMonitor):
    def __init__(self, mocks: "Mocks"):
        super().__init__(mocks)
        self.recorded: dict[str, Resource] = {}
        self.outputs: dict[str, dict] = {}

    def _record(self, request, read: bool) -> None:
        urn = self.make_urn(request.parent, request.type, request.name)
        self.recorded[urn] = Resource(
            urn=urn,
            type=request.type,
            name=request.name,
            custom=True if read else bool(request.custom),
            remote=False if read else bool(request.remote),
            parent=request.parent,
            provider=request.provider,
            dependencies=list(request.dependencies),
            property_dependencies={}
            if read
            else {k: list(v.urns) for k, v in request.propertyDependencies.items()},
            read=read,
            retain_on_delete=False if read else bool(request.retainOnDelete),
            deleted_with="" if read else request.deletedWith,
            ignore_changes=[] if read else list(request.ignoreChanges),
        )

    def RegisterResource(self, request):
        if request.type != "pulumi:pulumi:Stack":
            self._record(request, read=False)
            copy = type(request)()
            copy.CopyFrom(request)
            for v in copy.object.fields.values():
                _refs_to_urns(v)
            request = copy
        return super().RegisterResource(request)

    def ReadResource(self, request):
        self._record(request, read=True)
        return super().ReadResource(request)

    def RegisterResourceOutputs(self, request):
        self.outputs[request.urn] = json_format.MessageToDict(request.outputs)
        return super().RegisterResourceOutputs(request)

    def Call(self, request):
        # MockMonitor has no Call: component methods would raise AttributeError.
        raw = struct_pb2.Struct()
        raw.CopyFrom(request.args)
        raw.fields.pop("__self__", None)
        args = rpc.deserialize_properties(raw)
        ret = self.mocks.call(MockCallArgs(token=request.tok, args=args, provider=request.provider))
        return provider_pb2.CallResponse(**{"return": _sync_await(rpc.serialize_properties(ret, {}))})


def _asg_name(args) -> str:
    """The Auto Scaling group EKS makes for a managed node group (the UUID from the name: stable)."""
    digest = hashlib.sha256(args.name.encode()).hexdigest()
    uuid = f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
    return f"eks-{args.inputs.get('nodeGroupName', args.name)}-{uuid}"


def _rds_id(args: pulumi.runtime.MockResourceArgs) -> str:
    """An RDS resource's identifier: the one given, or what Pulumi's autonaming would make (name + suffix)."""
    return args.inputs.get("identifier") or f"{args.name}-0a1b2c3"


def _aws_uuid(prefix: str, args: pulumi.runtime.MockResourceArgs) -> str:
    """<prefix>-<uuid> as AMP ids read (ws-..., s-...), the same for the same resource every run."""
    h = hashlib.sha256(f"{args.typ}/{args.name}".encode()).hexdigest()
    return f"{prefix}-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


class Mocks(pulumi.runtime.Mocks):
    """Inputs come back as outputs, plus what the providers compute and the program reads."""

    def __init__(self, account: offline_account.Account = offline_account.DEV):
        self.inputs: dict[tuple[str, str], dict] = {}
        self.calls: list[tuple[str, dict]] = []
        self.account = account

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.inputs[(args.typ, args.name)] = args.inputs
        state = dict(args.inputs)
        rid = args.resource_id or f"{args.name}-id"
        computed = {
            "eks:index:Cluster": {
                "kubeconfigJson": json.dumps({"apiVersion": "v1", "kind": "Config", "clusters": []}),
                "clusterSecurityGroupId": "sg-0cluster0primary0",
            },
            "aws:ec2/launchTemplate:LaunchTemplate": {"latestVersion": 1},
            # EKS names a managed node group's Auto Scaling group eks-<node group name>-<node group
            # id>, the id a UUID (EKS API reference, Nodegroup.resources.autoScalingGroups;
            # https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupResources.html).
            "aws:eks/nodeGroup:NodeGroup": {
                "resources": [{"autoscalingGroups": [{"name": _asg_name(args)}]}]
            },
            # EC2 and CloudWatch Logs name their resources' ARNs so (Service Authorization
            # Reference, Amazon EC2 vpc and CloudWatch Logs log-group resource types); the
            # provider drops the log group ARN's trailing ":*".
            "aws:ec2/vpc:Vpc": {
                "arn": f"arn:aws:ec2:us-west-2:123456789012:vpc/{rid}",
                "ownerId": "123456789012",
            },
            "aws:cloudwatch/logGroup:LogGroup": {
                "arn": f"arn:aws:logs:us-west-2:123456789012:log-group:{args.inputs.get('name', args.name)}"
            },
            "aws:s3/bucket:Bucket": {"arn": f"arn:aws:s3:::{args.name}", "bucket": args.name},
            "aws:iam/role:Role": {"arn": f"arn:aws:iam::123456789012:role/{args.name}"},
            "aws:iam/policy:Policy": {"arn": f"arn:aws:iam::123456789012:policy/{args.name}"},
            "aws:ec2/placementGroup:PlacementGroup": {"name": args.name},
            # EKS names an add-on's ARN by cluster, add-on and an id of its own (Service
            # Authorization Reference, Amazon EKS resource type addon:
            # arn:${Partition}:eks:${Region}:${Account}:addon/${ClusterName}/${AddonName}/${UUID});
            # it answers the addonVersion it was given, so the inputs' one stands.
            "aws:eks/addon:Addon": {
                "arn": "arn:aws:eks:us-west-2:123456789012:addon/"
                f"{args.inputs.get('clusterName')}/{args.inputs.get('addonName')}/"
                f"{uuid.uuid5(uuid.NAMESPACE_URL, args.name)}"
            },
            # ECR names a repository's ARN arn:aws:ecr:<region>:<account>:repository/<name>
            # (Service Authorization Reference, Amazon ECR resource type repository).
            "aws:ecr/repository:Repository": {
                "arn": f"arn:aws:ecr:us-west-2:123456789012:repository/{args.inputs.get('name', args.name)}",
                "repositoryUrl": f"123456789012.dkr.ecr.us-west-2.amazonaws.com/{args.inputs.get('name', args.name)}",
                "registryId": "123456789012",
            },
            # EFS names a file system's ARN arn:aws:elasticfilesystem:<region>:<account>:file-system/<id>
            # (EFS API reference, FileSystemDescription.FileSystemArn;
            # https://docs.aws.amazon.com/efs/latest/ug/API_FileSystemDescription.html).
            "aws:efs/fileSystem:FileSystem": {
                "dnsName": "fs-0123456789abcdef0.efs.us-west-2.amazonaws.com",
                "arn": "arn:aws:elasticfilesystem:us-west-2:123456789012:file-system/fs-0123456789abcdef0",
            },
            # RDS answers an instance's endpoint as <identifier>.<account hash>.<region>.rds.amazonaws.com
            # on the engine's port, and names its ARN by the identifier (Amazon RDS User Guide, "Finding
            # the connection information for an RDS for MariaDB DB instance"; Service Authorization
            # Reference, Amazon RDS resource type db).
            "aws:rds/instance:Instance": {
                "address": f"{_rds_id(args)}.c0ffee123abc.us-west-2.rds.amazonaws.com",
                "port": 3306,
                "endpoint": f"{_rds_id(args)}.c0ffee123abc.us-west-2.rds.amazonaws.com:3306",
                "arn": f"arn:aws:rds:us-west-2:123456789012:db:{_rds_id(args)}",
                "engineVersionActual": "11.4.10",
                # RDS's DbiResourceId, the instance's region-unique, immutable id (Amazon RDS API
                # Reference, DBInstance: https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_DBInstance.html),
                # in the form its examples show: db- and 26 upper-case letters and digits.
                "resourceId": "db-" + hashlib.sha256(_rds_id(args).encode()).hexdigest()[:26].upper(),
            },
            "aws:rds/subnetGroup:SubnetGroup": {
                "name": f"{args.name}-0a1b2c3",
                "arn": f"arn:aws:rds:us-west-2:123456789012:subgrp:{args.name}-0a1b2c3",
            },
            "aws:rds/parameterGroup:ParameterGroup": {
                "name": f"{args.name}-0a1b2c3",
                "arn": f"arn:aws:rds:us-west-2:123456789012:pg:{args.name}-0a1b2c3",
            },
            # AMP names a workspace ws-<uuid> and answers its ARN and endpoint so (AMP API Reference,
            # WorkspaceDescription: https://docs.aws.amazon.com/prometheus/latest/APIReference/API_WorkspaceDescription.html;
            # the provider's prometheus_endpoint is the workspace URL without the api/v1/ of the API's
            # example, as the Terraform provider's aws_prometheus_workspace documents); a scraper is
            # s-<uuid> with its service-linked role (API_ScraperDescription; AMP User Guide, "Find and
            # delete scrapers").
            "aws:amp/workspace:Workspace": {
                "arn": f"arn:aws:aps:us-west-2:123456789012:workspace/{_aws_uuid('ws', args)}",
                "prometheusEndpoint": f"https://aps-workspaces.us-west-2.amazonaws.com/workspaces/{_aws_uuid('ws', args)}/",
            },
            "aws:amp/scraper:Scraper": {
                "arn": f"arn:aws:aps:us-west-2:123456789012:scraper/{_aws_uuid('s', args)}",
                "roleArn": "arn:aws:iam::123456789012:role/aws-service-role/scraper.aps.amazonaws.com/"
                f"AWSServiceRoleForAmazonPrometheusScraper_{_aws_uuid('', args)[1:16]}",
            },
            "aws:amp/ruleGroupNamespace:RuleGroupNamespace": {
                "arn": f"arn:aws:aps:us-west-2:123456789012:rulegroupsnamespace/{args.inputs.get('workspaceId')}/{args.inputs.get('name')}"
            },
            # SNS names a topic's ARN by its (auto)name; KMS a key by its id, a uuid (Service
            # Authorization Reference, Amazon SNS topic and AWS KMS key resource types).
            "aws:sns/topic:Topic": {"arn": f"arn:aws:sns:us-west-2:123456789012:{args.name}-0a1b2c3"},
            "aws:sns/topicSubscription:TopicSubscription": {
                "arn": f"{args.inputs.get('topic')}:{_aws_uuid('', args)[1:]}",
                "pendingConfirmation": True,
            },
            "aws:kms/key:Key": {
                "arn": f"arn:aws:kms:us-west-2:123456789012:key/{_aws_uuid('', args)[1:]}",
                "keyId": _aws_uuid("", args)[1:],
            },
            "random:index/randomString:RandomString": {
                "result": (args.name * 8)[: int(args.inputs.get("length", 16))].lower()
            },
            "random:index/randomPassword:RandomPassword": {
                "result": (args.name * 8)[: int(args.inputs.get("length", 16))]
            },
            "docker-build:index:Image": {"digest": IMAGE_DIGEST},
            # A dynamic resource's type, whatever its provider: the program has one, the image build.
            "pulumi-python:dynamic:Resource": _build_run(args) if "context_digest" in args.inputs else {},
            "random:index/randomBytes:RandomBytes": {
                "base64": base64.b64encode(
                    args.name.encode().ljust(int(args.inputs.get("length", 32)), b"k")
                ).decode()
            },
            "kubernetes:core/v1:Service": {
                "status": {"loadBalancer": {"ingress": [{"hostname": LOGIN_HOSTNAME}]}}
            },
            "kubernetes:helm.sh/v3:Release": {
                "status": {
                    "name": args.inputs.get("name", args.name),
                    "namespace": args.inputs.get("namespace", "default"),
                    "status": "deployed",
                }
            },
        }.get(args.typ, {})
        state.update(computed)
        if args.typ in ("aws:iam/role:Role", "aws:ec2/placementGroup:PlacementGroup"):
            rid = args.name  # their physical id is their name
        if args.typ in ("aws:amp/workspace:Workspace", "aws:amp/scraper:Scraper"):
            rid = _aws_uuid("ws" if args.typ.endswith("Workspace") else "s", args)
        if args.typ == "aws:sns/topic:Topic":
            rid = state["arn"]  # a topic's id is its ARN
        if args.typ == "aws:kms/key:Key":
            rid = state["keyId"]
        if args.typ == "aws:efs/fileSystem:FileSystem":
            rid = "fs-0123456789abcdef0"
        return [rid, state]

    def _provider_region(self, provider: str) -> str | None:
        """The region of the AWS provider an invoke went through: an explicit provider's `region`
        input (its reference is "<urn>::<id>", the URN ending in its name), else the stack's
        aws:region, which the default provider reads."""
        if provider:
            name = provider.rsplit("::", 1)[0].rsplit("::", 1)[-1]
            explicit = self.inputs.get(("pulumi:providers:aws", name))
            if explicit is not None:
                return explicit.get("region")
        return pulumi.Config("aws").get("region")

    def call(self, args: pulumi.runtime.MockCallArgs):
        self.calls.append((args.token, dict(args.args)))
        answered = offline_account.answer(
            self.account, args.token, dict(args.args), self._provider_region(args.provider)
        )
        if answered is not None:
            return answered
        if args.token == "aws:ecr/getAuthorizationToken:getAuthorizationToken":
            registry = args.args.get("registryId", "123456789012")
            region = args.args.get("region") or "us-west-2"
            return {
                "userName": "AWS",
                "password": f"token-for-{registry}",
                "proxyEndpoint": f"https://{registry}.dkr.ecr.{region}.amazonaws.com",
                "authorizationToken": "dG9rZW4=",
                "expiresAt": "never",
                "id": registry,
            }
        return {}


@dataclass
class Graph:
    """The program's resource graph as the engine would see it."""

    resources: list[Resource]
    stack_outputs: dict[str, Any]
    component_outputs: dict[str, dict]
    calls: list[tuple[str, dict]]
    error: BaseException | None = None
    warnings: list[str] = field(default_factory=list)  # pulumi.log.warn messages

    def named(self, name: str) -> Resource:
        found = [r for r in self.resources if r.name == name]
        assert len(found) == 1, f"expected one resource named {name!r}, found {len(found)}"
        return found[0]

    def of_type(self, type_: str) -> list[Resource]:
        return [r for r in self.resources if r.type == type_]

    def by_urn(self, urn: str) -> Resource:
        return next(r for r in self.resources if r.urn == urn)

    def output(self, key: str) -> Any:
        value = self.stack_outputs[key]
        return value["value"] if is_secret(value) else value

    def depends_on(self, dependent: Resource, dependency: Resource) -> bool:
        """Whether the engine orders `dependency` before `dependent` (and deletes it after):
        through an explicit or Output-carried dependency, the provider, or an ancestor's."""
        seen, todo = set(), [dependent.urn]
        while todo:
            urn = todo.pop()
            if urn in seen:
                continue
            seen.add(urn)
            r = next((x for x in self.resources if x.urn == urn), None)
            if r is None:
                continue
            edges = list(r.dependencies) + [u for us in r.property_dependencies.values() for u in us]
            if r.provider:
                edges.append(r.provider.rsplit("::", 1)[0])  # "<provider urn>::<id>"
            for e in edges:
                if e == dependency.urn or self._under(dependency.urn, e):
                    return True
                todo.append(e)
            if r.parent:
                todo.append(r.parent)
        return False

    def _under(self, urn: str, ancestor: str) -> bool:
        """Depending on a component means depending on everything under it."""
        r = next((x for x in self.resources if x.urn == urn), None)
        while r is not None and r.parent:
            if r.parent == ancestor:
                return True
            r = next((x for x in self.resources if x.urn == r.parent), None)
        return False


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(_SIG_KEY) == SECRET_SIG


def unwrap(value: Any) -> Any:
    """The plain value of a (possibly nested) secret-wrapped input; an archive of files as the
    path it was made from (what the engine hashes and uploads), not as the Python object."""
    if is_secret(value):
        return unwrap(value["value"])
    if isinstance(value, pulumi.FileArchive):
        return {"fileArchive": value.path}
    if isinstance(value, pulumi.AssetArchive):
        return {"assetArchive": {name: unwrap(member) for name, member in value.assets.items()}}
    if isinstance(value, pulumi.FileAsset):
        return {"fileAsset": value.path}
    if isinstance(value, dict):
        return {k: unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    return value


class _Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


# The graphs this process has recorded, by what decides them: the config the CLI would hand the
# program, preview, expect_error, the calendar day stack/config.py reads (tests move it with
# monkeypatch) and the account. The program reads nothing else that changes within a process:
# no environment variables, no clock but today(), the repository's files as checked out.
# The test suite runs many tests on one configuration (about 0.7 s a run); each gets a copy.
_RECORDED: dict[tuple, list[tuple[offline_account.Account, Graph]]] = {}


def _recorded_key(stack: str, cfg: dict[str, str], preview: bool, expect_error: bool) -> tuple:
    if str(PROJECT_DIR) not in sys.path:
        sys.path.insert(0, str(PROJECT_DIR))
    today = importlib.import_module("stack.config").today()
    return (stack, tuple(sorted(cfg.items())), preview, expect_error, today)


def _copy(graph: Graph) -> Graph:
    """A copy no caller can change the recorded graph through; the error is shared (a test reads
    its message and type, and a deep copy of an exception drops its traceback and cause)."""
    return copy.deepcopy(graph, {} if graph.error is None else {id(graph.error): graph.error})


def run_program(
    stack: str = "dev",
    overrides: dict[str, Any] | None = None,
    preview: bool = False,
    expect_error: bool = False,
    account: offline_account.Account = offline_account.DEV,
) -> Graph:
    """Run __main__.py once against `account` (devkit/offline_account.py). With expect_error, a
    failing program returns its error in the Graph (with whatever it registered before failing)
    instead of raising. A configuration this process already ran returns a copy of that graph
    (_RECORDED); a run that raises is never kept."""
    cfg = stack_config(stack, overrides)
    key = _recorded_key(stack, cfg, preview, expect_error)
    for seen, graph in _RECORDED.get(key, []):
        if seen == account:
            return _copy(graph)
    graph = _run_program(stack, cfg, preview, expect_error, account)
    _RECORDED.setdefault(key, []).append((account, graph))
    return _copy(graph)


def run_function(program: Callable[[], None], stack: str = "dev") -> Graph:
    """Run `program` (code that registers resources, such as one component with literal inputs)
    under the same mocks as __main__.py, with the stack's config; never kept in _RECORDED. For a
    component the program does not wire yet."""
    return _run_program(stack, stack_config(stack), False, False, offline_account.DEV, program)


def _run_main() -> None:
    runpy.run_path(str(PROJECT_DIR / "__main__.py"), run_name="__main__")


def _run_program(
    stack: str,
    cfg: dict[str, str],
    preview: bool,
    expect_error: bool,
    account: offline_account.Account,
    program: Callable[[], None] = _run_main,
) -> Graph:
    project = _yaml(PROJECT_DIR / "Pulumi.yaml")["name"]
    mocks = Mocks(account)
    monitor = RecordingMonitor(mocks)
    warnings = _Warnings()
    logger = logging.getLogger(f"slinky-eks-mocks-{id(warnings)}")
    logger.propagate = False
    logger.addHandler(warnings)
    pulumi.runtime.set_mocks(
        mocks, project=project, stack=stack, preview=preview, monitor=monitor, logger=logger
    )
    pulumi.runtime.set_all_config(cfg, [])
    if str(PROJECT_DIR) not in sys.path:
        sys.path.insert(0, str(PROJECT_DIR))

    exported: dict[str, Any] = {}

    async def resolve(key: str, value: Any) -> None:
        out = pulumi.Output.from_input(value)
        plain = await out.future()
        exported[key] = {_SIG_KEY: SECRET_SIG, "value": plain} if await out.is_secret() else plain

    @pulumi.runtime.test
    def _run():
        program()

    # What the program fetches outside Pulumi (the region's RDS CA bundle) answered by the account
    # too: no run downloads anything.
    from components import accounting_database

    fetch_ca_bundle = accounting_database.rds_ca_bundle
    accounting_database.rds_ca_bundle = lambda region: offline_account.rds_ca_bundle(region)
    # And the registries the images are resolved from (stack/registry.py): the account's images.
    from stack import registry

    registry_http = registry.http
    registry.http = lambda method, url, headers: offline_account.registry_answer(
        account, method, url, headers
    )
    error = None
    try:
        _run()
    except Exception as e:  # noqa: BLE001 - the program's own error is what the test inspects
        if not expect_error:
            raise
        error = e
    finally:
        accounting_database.rds_ca_bundle = fetch_ca_bundle
        registry.http = registry_http
    for r in monitor.recorded.values():
        raw = mocks.inputs.get((r.type, r.name), {})
        r.secret_inputs = {k for k, v in raw.items() if is_secret(v)}
        r.inputs = {k: unwrap(v) for k, v in raw.items()}
    if error is not None:
        return Graph(
            resources=list(monitor.recorded.values()),
            stack_outputs={},
            component_outputs=monitor.outputs,
            calls=mocks.calls,
            error=error,
            warnings=warnings.messages,
        )
    if expect_error:
        raise AssertionError("the program succeeded but an error was expected")
    stack = pulumi.runtime.settings.get_root_resource()

    @pulumi.runtime.test
    def _resolve_exports():
        return pulumi.Output.from_input(
            asyncio.ensure_future(asyncio.gather(*[resolve(k, v) for k, v in stack.outputs.items()]))
        )

    _resolve_exports()
    return Graph(
        resources=list(monitor.recorded.values()),
        stack_outputs=exported,
        component_outputs=monitor.outputs,
        calls=mocks.calls,
        warnings=warnings.messages,
    )
