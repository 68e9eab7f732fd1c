"""`make up|preview|destroy` check what they need before installing or running anything and say how
to get what is missing (tools/preflight.sh), with a PATH built for each case."""

import os
import pathlib
import shutil
import subprocess

import pytest
import yaml

from devkit.offline_run import PROJECT_DIR

BASH = shutil.which("bash")
MAKE = shutil.which("make")
# The AWS CLI's message without credentials (botocore's NoCredentialsError).
NO_CREDENTIALS = 'Unable to locate credentials. You can configure credentials by running "aws configure".'


def tool(bin_dir: pathlib.Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!{BASH}\n{script}\n")
    path.chmod(0o755)


@pytest.fixture
def bin_dir(tmp_path):
    """A PATH holding bash and, per test, fake pulumi/aws/docker: nothing of the machine's own."""
    d = tmp_path / "bin"
    d.mkdir()
    (d / "bash").symlink_to(BASH)
    return d


# checkip.amazonaws.com answers the caller's public IPv4 address and a newline (EC2 user guide,
# "Authorize inbound traffic for your Linux instances": https://docs.aws.amazon.com/AWSEC2/latest/
# UserGuide/authorizing-access-to-an-instance.html). Pulumi.dev.yaml allows 203.0.113.10/32.
def checkip(bin_dir, address="203.0.113.10"):
    tool(
        bin_dir,
        "curl",
        f'[[ "$*" == "-4 -fsS --max-time 5 https://checkip.amazonaws.com" ]] || exit 2\necho {address}',
    )


# What `pulumi login` stores (pulumi/pulumi v3.259.0, sdk/go/common/workspace/creds.go: json.MarshalIndent
# of Credentials, "current" the selected backend) in ~/.pulumi/credentials.json; HOME is bin_dir here.
def logged_in(home, url="s3://team-state-bucket"):
    (home / ".pulumi").mkdir(exist_ok=True)
    (home / ".pulumi/credentials.json").write_text(
        f'{{\n    "current": "{url}",\n    "accounts": {{\n        "{url}": {{}}\n    }}\n}}\n'
    )


def all_tools(bin_dir):
    # The fake pulumi records its arguments, one call a line.
    tool(bin_dir, "pulumi", f'echo "$*" >> {bin_dir}/pulumi-calls')
    tool(bin_dir, "aws", 'echo "arn:aws:iam::123456789012:user/ci"')
    tool(bin_dir, "docker", "exit 0")
    checkip(bin_dir)
    logged_in(bin_dir)


def pulumi_calls(bin_dir):
    calls = bin_dir / "pulumi-calls"
    return calls.read_text().splitlines() if calls.exists() else []


def preflight(bin_dir, command="up", cwd=PROJECT_DIR, **env):
    result = subprocess.run(
        [BASH, str(PROJECT_DIR / "tools/preflight.sh"), command],
        cwd=cwd,
        env={"PATH": str(bin_dir), "HOME": str(bin_dir), **env},
        capture_output=True,
        text=True,
        timeout=30,
    )
    return result.returncode, result.stderr.splitlines()


PASSPHRASE = {"PULUMI_CONFIG_PASSPHRASE": "correct horse"}


def test_everything_present_passes(bin_dir):
    all_tools(bin_dir)
    assert preflight(bin_dir, **PASSPHRASE) == (0, [])


def test_missing_pulumi_cli_says_how_to_install_it(bin_dir):
    all_tools(bin_dir)
    (bin_dir / "pulumi").unlink()
    assert preflight(bin_dir, **PASSPHRASE) == (
        1,
        [
            "make up: the Pulumi CLI is not on PATH: install it with `curl -fsSL https://get.pulumi.com | sh` "
            "(https://www.pulumi.com/docs/install/)"
        ],
    )


def test_missing_aws_cli_says_why_it_is_needed(bin_dir):
    all_tools(bin_dir)
    (bin_dir / "aws").unlink()
    code, lines = preflight(bin_dir, "destroy", **PASSPHRASE)
    assert code == 1 and len(lines) == 1
    assert "the AWS CLI is not on PATH (the kubeconfig runs `aws eks get-token`)" in lines[0]


def test_unusable_credentials_quote_the_cli_and_say_how_to_configure(bin_dir):
    all_tools(bin_dir)
    tool(bin_dir, "aws", f"echo >&2\necho '{NO_CREDENTIALS}' >&2\nexit 255")
    code, lines = preflight(bin_dir, "preview", **PASSPHRASE)
    assert code == 1
    assert lines == [
        f"make preview: AWS credentials do not work ({NO_CREDENTIALS}): run `aws configure` or "
        "`aws sso login`, or set AWS_PROFILE "
        "(https://docs.aws.amazon.com/cli/latest/userguide/cli-chap-configure.html)"
    ]


# Docker only for imageBuilder: local (the default, codebuild, builds the image in the region)

LOCAL_BUILDER = "  slinky-eks:imageBuilder: local\n"


def test_up_with_the_default_builder_needs_no_docker(bin_dir):
    all_tools(bin_dir)
    (bin_dir / "docker").unlink()
    assert preflight(bin_dir, **PASSPHRASE) == (0, [])


def test_up_with_the_codebuild_builder_named_needs_no_docker(bin_dir, tmp_path):
    all_tools(bin_dir)
    (bin_dir / "docker").unlink()
    project = stack_dir(tmp_path, '  slinky-eks:imageBuilder: "codebuild"  # in the region\n')
    assert preflight(bin_dir, cwd=project, **PASSPHRASE) == (0, [])


def test_up_with_the_local_builder_asks_for_docker(bin_dir, tmp_path):
    all_tools(bin_dir)
    (bin_dir / "docker").unlink()
    code, lines = preflight(bin_dir, cwd=stack_dir(tmp_path, LOCAL_BUILDER), **PASSPHRASE)
    assert code == 1 and lines == [
        "make up: Docker is not on PATH (with imageBuilder: local `up` builds and pushes the slurmd image "
        "here): install Docker Engine, https://docs.docker.com/engine/install/"
    ]


def test_the_builder_is_the_one_of_the_stack_file_of_stack(bin_dir, tmp_path):
    all_tools(bin_dir)
    (bin_dir / "docker").unlink()
    project = stack_dir(tmp_path, "  slinky-eks:imageBuilder: 'local'\n", stack="laptop")
    assert preflight(bin_dir, cwd=project, STACK="laptop", **PASSPHRASE)[0] == 1
    assert preflight(bin_dir, cwd=project, STACK="dev", **PASSPHRASE) == (0, [])


def test_up_with_the_local_builder_needs_docker_with_buildx(bin_dir, tmp_path):
    all_tools(bin_dir)
    tool(
        bin_dir,
        "docker",
        '[[ $1 == buildx ]] && { echo "docker: unknown command: docker buildx" >&2; exit 1; }; exit 0',
    )
    code, lines = preflight(bin_dir, cwd=stack_dir(tmp_path, LOCAL_BUILDER), **PASSPHRASE)
    assert code == 1 and lines == [
        "make up: Docker has no buildx plugin: install it, https://github.com/docker/buildx#installing"
    ]


def test_up_with_the_local_builder_needs_a_running_docker_daemon(bin_dir, tmp_path):
    all_tools(bin_dir)
    tool(bin_dir, "docker", "[[ $1 == info ]] && exit 1; exit 0")
    code, lines = preflight(bin_dir, cwd=stack_dir(tmp_path, LOCAL_BUILDER), **PASSPHRASE)
    assert code == 1 and "the Docker daemon is not reachable" in lines[0]


def test_preview_and_destroy_do_not_need_docker_with_the_local_builder(bin_dir, tmp_path):
    all_tools(bin_dir)
    (bin_dir / "docker").unlink()
    project = stack_dir(tmp_path, LOCAL_BUILDER)
    assert preflight(bin_dir, "preview", cwd=project, **PASSPHRASE) == (0, [])
    assert preflight(bin_dir, "destroy", cwd=project, **PASSPHRASE) == (0, [])


def test_an_empty_passphrase_needs_the_opt_in_and_says_how(bin_dir):
    all_tools(bin_dir)
    code, lines = preflight(bin_dir, PULUMI_CONFIG_PASSPHRASE="")
    assert code == 1 and lines == [
        "make up: no state passphrase: export PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) "
        "to encrypt the stack's secrets, or run `make up ALLOW_EMPTY_PASSPHRASE=1` to use an empty one on purpose"
    ]
    assert preflight(bin_dir, ALLOW_EMPTY_PASSPHRASE="1") == (0, [])
    assert preflight(bin_dir, PULUMI_CONFIG_PASSPHRASE_FILE="/run/secrets/pulumi") == (0, [])


def test_every_missing_piece_is_reported_at_once(bin_dir, tmp_path):
    code, lines = preflight(bin_dir, cwd=stack_dir(tmp_path, LOCAL_BUILDER))
    problems = [line for line in lines if not line.startswith("make up: warning:")]
    assert code == 1 and [line.split(":")[1].strip() for line in problems] == [
        "the Pulumi CLI is not on PATH",
        "the AWS CLI is not on PATH (the kubeconfig runs `aws eks get-token`)",
        "Docker is not on PATH (with imageBuilder",
        "no state passphrase",
    ]


def test_bad_usage_exits_2(bin_dir):
    assert preflight(bin_dir, "apply")[0] == 2


def test_make_up_stops_before_installing_anything(bin_dir):
    result = subprocess.run(
        [MAKE, "--no-print-directory", "up"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        env={"PATH": str(bin_dir), "HOME": str(bin_dir)},
        timeout=30,
    )
    assert result.returncode != 0
    assert "make up: the Pulumi CLI is not on PATH" in result.stderr
    assert "pip" not in result.stdout + result.stderr


def test_make_up_installs_only_what_pulumi_up_needs():
    env = {**os.environ, "PULUMI_CONFIG_PASSPHRASE": "x"}
    dry = subprocess.run(
        [MAKE, "--no-print-directory", "-n", "-B", "up"],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    assert "tools/preflight.sh up" in dry and "-r requirements.txt" in dry
    assert "requirements-dev.txt" not in dry
    assert dry.index("tools/preflight.sh up") < dry.index("pip install") < dry.index("pulumi up")


def test_make_passes_the_opt_in_to_the_check():
    dry = subprocess.run(
        [MAKE, "-n", "destroy", "ALLOW_EMPTY_PASSPHRASE=1"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    assert "ALLOW_EMPTY_PASSPHRASE=1 bash tools/preflight.sh destroy" in dry


def test_make_passes_the_stack_to_the_check():
    dry = subprocess.run(
        [MAKE, "-n", "destroy", "STACK=prod"], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=30
    ).stdout
    assert "STACK=prod ALLOW_EMPTY_PASSPHRASE= bash tools/preflight.sh destroy" in dry


# The deployer inside the API endpoint's allowed blocks


def stack_dir(tmp_path, body: str, stack="dev"):
    d = tmp_path / "project"
    d.mkdir()
    (d / f"Pulumi.{stack}.yaml").write_text("config:\n  aws:region: us-west-2\n" + body)
    return d


SSH_ONLY = "  slinky-eks:sshAllowedCidrs:\n    - 203.0.113.0/24\n    - 2001:db8::/32\n"


def test_a_deployer_inside_the_ssh_blocks_the_api_defaults_to_passes(bin_dir, tmp_path):
    all_tools(bin_dir)
    checkip(bin_dir, "203.0.113.77")
    assert preflight(bin_dir, cwd=stack_dir(tmp_path, SSH_ONLY), **PASSPHRASE) == (0, [])


def test_a_deployer_outside_the_api_blocks_is_refused_naming_the_key(bin_dir, tmp_path):
    all_tools(bin_dir)
    checkip(bin_dir, "198.51.100.7")
    code, lines = preflight(bin_dir, "destroy", cwd=stack_dir(tmp_path, SSH_ONLY), **PASSPHRASE)
    assert code == 1 and lines == [
        "make destroy: this machine's public address 198.51.100.7 is outside sshAllowedCidrs "
        "(apiAllowedCidrs is unset) (203.0.113.0/24): the EKS API endpoint would refuse it and every "
        "Kubernetes call of `pulumi destroy` would time out; add 198.51.100.7/32 to "
        "slinky-eks:apiAllowedCidrs in Pulumi.dev.yaml, or run from inside those blocks"
    ]


def test_api_allowed_cidrs_win_over_the_ssh_blocks(bin_dir, tmp_path):
    all_tools(bin_dir)
    project = stack_dir(
        tmp_path, SSH_ONLY + '  slinky-eks:apiAllowedCidrs: ["198.51.100.0/28", 192.0.2.1/32]\n'
    )
    checkip(bin_dir, "198.51.100.7")
    assert preflight(bin_dir, cwd=project, **PASSPHRASE) == (0, [])
    checkip(bin_dir, "203.0.113.77")
    code, lines = preflight(bin_dir, cwd=project, **PASSPHRASE)
    assert code == 1 and "outside apiAllowedCidrs (198.51.100.0/28 192.0.2.1/32)" in lines[0]


def test_the_stack_file_is_the_one_of_stack(bin_dir, tmp_path):
    all_tools(bin_dir)
    project = stack_dir(tmp_path, "  slinky-eks:apiAllowedCidrs:\n    - 192.0.2.0/24\n", stack="prod")
    code, lines = preflight(bin_dir, cwd=project, STACK="prod", **PASSPHRASE)
    assert code == 1 and "in Pulumi.prod.yaml" in lines[0]


def test_an_address_in_the_same_octets_but_another_prefix_is_outside(bin_dir, tmp_path):
    all_tools(bin_dir)
    checkip(bin_dir, "203.0.113.200")
    project = stack_dir(tmp_path, "  slinky-eks:apiAllowedCidrs:\n    - 203.0.113.0/25\n")
    assert preflight(bin_dir, cwd=project, **PASSPHRASE)[0] == 1


def test_an_unreachable_checkip_is_a_warning_only(bin_dir, tmp_path):
    all_tools(bin_dir)
    tool(bin_dir, "curl", 'echo "curl: (28) Connection timed out after 5001 milliseconds" >&2; exit 28')
    code, lines = preflight(bin_dir, cwd=stack_dir(tmp_path, SSH_ONLY), **PASSPHRASE)
    assert code == 0 and lines == [
        "make up: warning: checkip.amazonaws.com did not answer: could not check that this machine's "
        "public address is inside sshAllowedCidrs (apiAllowedCidrs is unset) (203.0.113.0/24), where "
        "the EKS API endpoint answers"
    ]


def test_without_curl_the_address_check_is_a_warning_only(bin_dir, tmp_path):
    all_tools(bin_dir)
    (bin_dir / "curl").unlink()
    code, lines = preflight(bin_dir, cwd=stack_dir(tmp_path, SSH_ONLY), **PASSPHRASE)
    assert code == 0 and len(lines) == 1 and lines[0].startswith("make up: warning: curl is not on PATH")


def test_the_dev_stack_files_example_address_is_checked(bin_dir):
    all_tools(bin_dir)
    checkip(bin_dir, "198.51.100.7")
    code, lines = preflight(bin_dir, "preview", **PASSPHRASE)
    assert code == 1 and "outside sshAllowedCidrs (apiAllowedCidrs is unset) (203.0.113.10/32)" in lines[0]


# The state backend: a team's choice wins; with none, the one-person local backend, said so

LOCAL_LOGIN = "login --non-interactive file://~/.pulumi-slinky-eks"
LOCAL_NOTE = (
    "make up: note: no Pulumi backend chosen (no `pulumi login`, PULUMI_BACKEND_URL or "
    "PULUMI_ACCESS_TOKEN): logged in to file://~/.pulumi-slinky-eks, state on this machine only; a team "
    "shares one backend instead, docs/ci.md#state-a-team-shares"
)


def never_logged_in(bin_dir):
    all_tools(bin_dir)
    (bin_dir / ".pulumi/credentials.json").unlink()
    (bin_dir / "mkdir").symlink_to(shutil.which("mkdir"))


def test_with_no_backend_chosen_it_logs_in_to_the_local_one_and_says_so(bin_dir):
    never_logged_in(bin_dir)
    assert preflight(bin_dir, **PASSPHRASE) == (0, [LOCAL_NOTE])
    assert pulumi_calls(bin_dir) == [LOCAL_LOGIN]
    assert (bin_dir / ".pulumi-slinky-eks").is_dir()


def test_a_backend_of_pulumi_login_is_left_alone(bin_dir):
    all_tools(bin_dir)
    assert preflight(bin_dir, **PASSPHRASE) == (0, [])
    assert pulumi_calls(bin_dir) == []


def test_the_login_is_read_where_pulumi_home_puts_it(bin_dir, tmp_path):
    never_logged_in(bin_dir)
    logged_in(tmp_path, "https://api.pulumi.com")
    assert preflight(bin_dir, PULUMI_HOME=str(tmp_path / ".pulumi"), **PASSPHRASE) == (0, [])
    assert pulumi_calls(bin_dir) == []


def test_a_backend_url_or_an_access_token_in_the_environment_is_left_alone(bin_dir):
    never_logged_in(bin_dir)
    assert preflight(bin_dir, PULUMI_BACKEND_URL="s3://team-state?region=us-west-2", **PASSPHRASE) == (0, [])
    assert preflight(bin_dir, PULUMI_ACCESS_TOKEN="pul-0123", **PASSPHRASE) == (0, [])
    assert pulumi_calls(bin_dir) == []


def test_a_logout_is_not_a_login(bin_dir):
    # `pulumi logout` of the current backend leaves the file with no "current".
    never_logged_in(bin_dir)
    (bin_dir / ".pulumi/credentials.json").write_text('{\n    "accounts": {}\n}\n')
    assert preflight(bin_dir, **PASSPHRASE) == (0, [LOCAL_NOTE])


def test_nothing_is_logged_in_to_while_something_is_missing(bin_dir):
    never_logged_in(bin_dir)
    code, lines = preflight(bin_dir)
    assert code == 1 and "no state passphrase" in lines[0] and len(lines) == 1
    assert pulumi_calls(bin_dir) == []


def test_a_failed_local_login_is_reported_with_the_cli_s_last_line(bin_dir):
    never_logged_in(bin_dir)
    tool(bin_dir, "pulumi", 'echo "error: problem logging in: permission denied" >&2; exit 255')
    code, lines = preflight(bin_dir, **PASSPHRASE)
    assert code == 1 and lines == [
        "make up: no Pulumi backend chosen and `pulumi login file://~/.pulumi-slinky-eks` failed (error: "
        "problem logging in: permission denied): run `pulumi login` with the backend to use "
        "(docs/ci.md#state-a-team-shares)"
    ]


def test_the_project_names_no_backend_so_a_login_wins():
    # A project's backend.url beats `pulumi login` (pulumi/pulumi v3.259.0, pkg/workspace/creds.go).
    project = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())
    assert "backend" not in project


def test_a_team_backend_in_pulumi_yaml_is_left_alone(bin_dir, tmp_path):
    never_logged_in(bin_dir)
    project = stack_dir(tmp_path, "")
    (project / "Pulumi.yaml").write_text(
        "name: slinky-eks\nruntime: python\nbackend:\n  # the team's state\n  url: s3://team-state?region=us-west-2\n"
    )
    assert preflight(bin_dir, cwd=project, **PASSPHRASE) == (0, [])
    assert pulumi_calls(bin_dir) == []


def test_a_backend_on_this_machine_is_named_on_every_run(bin_dir):
    all_tools(bin_dir)
    logged_in(bin_dir, "file:///home/me/.pulumi-slinky-eks")
    assert preflight(bin_dir, **PASSPHRASE) == (
        0,
        [
            "make up: note: the state backend is file:///home/me/.pulumi-slinky-eks, state on this machine "
            "only; a team shares one backend instead, docs/ci.md#state-a-team-shares"
        ],
    )
    code, lines = preflight(bin_dir, PULUMI_BACKEND_URL="file:///srv/state", **PASSPHRASE)
    assert code == 0 and lines[0].startswith("make up: note: the state backend is file:///srv/state, ")
    assert pulumi_calls(bin_dir) == []


def test_the_backend_named_is_the_one_pulumi_yaml_sets(bin_dir, tmp_path):
    all_tools(bin_dir)
    project = stack_dir(tmp_path, "")
    (project / "Pulumi.yaml").write_text(
        "name: slinky-eks\nbackend:\n  url: file:///nfs/team-state  # one NFS\n"
    )
    code, lines = preflight(bin_dir, cwd=project, **PASSPHRASE)
    assert code == 0 and lines[0].startswith("make up: note: the state backend is file:///nfs/team-state, ")


def state_left_in_the_local_backend(home, stack="dev", suffix=".json"):
    # Where the file backend keeps a stack of a project (pulumi/pulumi v3.259.0, pkg/backend/diy).
    stacks = home / ".pulumi-slinky-eks/.pulumi/stacks/slinky-eks"
    stacks.mkdir(parents=True)
    (stacks / f"{stack}{suffix}").write_text('{"version": 3, "checkpoint": {}}\n')
    return stacks / f"{stack}{suffix}"


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_a_stack_left_in_the_local_backend_is_refused_under_another_backend(bin_dir, suffix):
    all_tools(bin_dir)
    logged_in(bin_dir, "https://api.pulumi.com")
    left = state_left_in_the_local_backend(bin_dir, suffix=suffix)
    code, lines = preflight(bin_dir, **PASSPHRASE)
    assert code == 1 and lines == [
        f"make up: the state backend is https://api.pulumi.com, but stack dev's state is in "
        f"file://~/.pulumi-slinky-eks ({left}): `pulumi up` there would start an empty stack and create "
        "everything again; keep it with `pulumi login file://~/.pulumi-slinky-eks`, or move it "
        "(`PULUMI_BACKEND_URL=file://~/.pulumi-slinky-eks pulumi stack export --stack dev --file "
        "dev.state.json`, then `pulumi stack init dev && pulumi stack import --stack dev --file "
        f"dev.state.json` on https://api.pulumi.com) and remove {left}"
    ]
    assert pulumi_calls(bin_dir) == []


def test_a_stack_left_in_the_local_backend_is_refused_under_an_access_token_or_backend_url(bin_dir):
    never_logged_in(bin_dir)
    state_left_in_the_local_backend(bin_dir)
    for env in ({"PULUMI_ACCESS_TOKEN": "pul-0123"}, {"PULUMI_BACKEND_URL": "s3://team-state"}):
        code, lines = preflight(bin_dir, **env, **PASSPHRASE)
        assert code == 1 and "but stack dev's state is in file://~/.pulumi-slinky-eks" in lines[0]


def test_the_local_backend_with_its_stack_passes(bin_dir):
    all_tools(bin_dir)
    state_left_in_the_local_backend(bin_dir)
    for url in ("file://~/.pulumi-slinky-eks", f"file://{bin_dir}/.pulumi-slinky-eks/"):
        logged_in(bin_dir, url)
        code, lines = preflight(bin_dir, **PASSPHRASE)
        assert code == 0 and [line for line in lines if "note:" not in line] == []


def test_another_stack_in_the_local_backend_does_not_hold_this_one(bin_dir):
    all_tools(bin_dir)
    logged_in(bin_dir, "https://api.pulumi.com")
    state_left_in_the_local_backend(bin_dir, stack="prod")
    assert preflight(bin_dir, **PASSPHRASE) == (0, [])


def test_with_an_existing_cluster_the_api_blocks_of_the_stack_file_are_not_held_against_the_deployer(
    bin_dir, tmp_path
):
    all_tools(bin_dir)
    checkip(bin_dir, "198.51.100.7")  # outside sshAllowedCidrs, which the existing cluster's endpoint ignores
    project = stack_dir(tmp_path, SSH_ONLY + "  slinky-eks:existingClusterName: shared-gpu\n")
    assert preflight(bin_dir, cwd=project, **PASSPHRASE) == (
        0,
        [
            "make up: note: the address check is left to `.venv/bin/python -m tools.api_reach "
            "Pulumi.dev.yaml`: with existingClusterName (shared-gpu) the API endpoint answers the blocks "
            "its owner set, not apiAllowedCidrs"
        ],
    )
