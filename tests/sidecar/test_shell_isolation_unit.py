"""sidecar/shell_isolation.py and sidecar/shell_prefix.sh at their seams: the shell the CLI would pick, where the prefix
may live, the flag settings it takes, and what the prefix itself does with a command line. Through the real CLI and
sidecar: tests/security/test_shell_isolation.py."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from hooks.builtin import builtin_registry
from sidecar import shell_isolation as si


def executable(path: Path) -> str:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_the_shell_is_the_one_the_cli_would_pick(tmp_path: Path) -> None:
    bash, zsh = executable(tmp_path / "bash"), executable(tmp_path / "zsh")
    path = str(tmp_path)
    # SHELL naming bash or zsh, and runnable: that one.
    assert si.cli_shell({"SHELL": zsh, "PATH": path}) == zsh
    # SHELL is fish: zsh first, the one on PATH.
    assert si.cli_shell({"SHELL": "/usr/bin/fish", "PATH": path}) == zsh
    # SHELL names a bash that is not there: bash first, the one on PATH.
    assert si.cli_shell({"SHELL": "/nowhere/bash", "PATH": path}) == bash
    # Nothing on PATH: the fixed folders (this machine has /bin/bash).
    assert si.cli_shell({"SHELL": "/nowhere/bash", "PATH": str(tmp_path / "empty")}) in ("/bin/bash", "/usr/bin/bash")


def test_the_prefix_in_a_macos_box_is_used_only_where_the_session_cannot_write_above_it() -> None:
    script = os.path.realpath(si.PREFIX_SCRIPT)
    assert si.outside_path(["/somewhere/else", "/tmp/project"]) == script
    assert si.outside_path([os.path.dirname(script)]) is None  # its folder is writable: it could be swapped
    assert si.outside_path([str(Path(script).parents[2])]) is None  # a folder above it: one could be renamed
    assert si.outside_path(["/"]) is None


def test_without_a_boundary_the_packages_own_prefix_runs_unless_its_path_or_mode_would_break_commands(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = os.path.realpath(si.PREFIX_SCRIPT)
    assert si.prefix_path(None) == si.unconfined_path() == script  # this checkout is writable: no matter, no box
    # A path the CLI would cut at " -" (it reads what follows as the prefix's options), or a file without its mode.
    odd = tmp_path / "my -dir" / "shell_prefix.sh"
    odd.parent.mkdir()
    odd.write_text(si.PREFIX_SCRIPT.read_text())
    odd.chmod(0o755)
    monkeypatch.setattr(si, "PREFIX_SCRIPT", odd)
    assert si.unconfined_path() is None
    plain = tmp_path / "plain.sh"
    plain.write_text(si.PREFIX_SCRIPT.read_text())
    plain.chmod(0o644)
    monkeypatch.setattr(si, "PREFIX_SCRIPT", plain)
    assert si.unconfined_path() is None
    plain.chmod(0o755)
    assert si.unconfined_path() == str(plain)


def test_inside_a_linux_box_the_prefix_sits_under_run_remounted_read_only() -> None:
    wrapper = str(si.WRAPPER_SCRIPT)
    assert si.bwrap_args(("/run", "/home/u/.ssh")) == [
        "--ro-bind", str(si.PREFIX_SCRIPT), si.INSIDE_PATH,
        "--ro-bind", wrapper, "/run/orion-shell/orion-bash.sh", "--ro-bind", wrapper, "/run/orion-shell/orion-zsh.sh",
        "--remount-ro", "/run"]
    assert si.bwrap_args(("/home/u/.ssh",)) == []  # no hidden /run: no place, the rewrite stays


def test_the_flag_env_names_what_the_prefix_takes_out_and_pins_bash_env() -> None:
    env = si.flag_env("/run/orion-shell/prefix", "/bin/bash", ["ANTHROPIC_BASE_URL", "ORION_X"])
    assert env["CLAUDE_CODE_SHELL_PREFIX"] == "/run/orion-shell/prefix" and env["CLAUDE_CODE_SHELL"] == "/bin/bash"
    assert env["BASH_ENV"] == ""
    assert env["ORION_SHELL_UNSET"].split() == sorted({"ANTHROPIC_BASE_URL", "ORION_X", "BASH_ENV",
                                                       *si.OWN_NAMES})


def test_a_session_takes_env_isolations_own_names_and_nothing_without_it(tmp_path: Path) -> None:
    registry = builtin_registry({"env-isolation": {"extra_names": ["MY_DEPLOY_TOKEN"]}}, data_dir=tmp_path,
                                defer=True)
    cli_env = {"PATH": os.environ["PATH"], "SHELL": "/bin/bash"}
    box = type("B", (), {"platform": "linux", "plan": type("P", (), {"hidden_dirs": ("/run",)})()})()
    env = si.session_flag_env(registry, box, cli_env, environ={"ORION_DATA_DIR": "x", "HOOK_TOKEN_A": "y"})
    assert env is not None and env["CLAUDE_CODE_SHELL_PREFIX"] == si.INSIDE_PATH
    assert {"MY_DEPLOY_TOKEN", "ANTHROPIC_API_KEY", "HOOK_TOKEN_A"} <= set(env["ORION_SHELL_UNSET"].split())
    # No hidden /run in the plan: no safe place; env-isolation rewrites, BASH_ENV stays pinned.
    bare = type("B", (), {"platform": "linux", "plan": type("P", (), {"hidden_dirs": ()})()})()
    assert si.session_flag_env(registry, bare, cli_env) == si.PINNED
    # No boundary: the package's own prefix; the launcher's ORION_SHELL_PREFIX=0: the rewrite, BASH_ENV pinned.
    unboxed = si.session_flag_env(registry, None, cli_env, environ={})
    assert unboxed is not None and unboxed["CLAUDE_CODE_SHELL_PREFIX"] == os.path.realpath(si.PREFIX_SCRIPT)
    for off_value in ("0", "off", " False "):
        assert si.session_flag_env(registry, box, cli_env, environ={si.SWITCH: off_value}) == si.PINNED
    assert si.session_flag_env(registry, box, cli_env, environ={si.SWITCH: "1"})["CLAUDE_CODE_SHELL_PREFIX"] \
        == si.INSIDE_PATH
    # env-isolation switched off: nothing at all.
    off = builtin_registry({"env-isolation": {"enabled": False}}, data_dir=tmp_path, defer=True)
    assert si.session_flag_env(off, box, cli_env) is None


def run_prefix(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", str(si.PREFIX_SCRIPT), *args], env={"PATH": os.environ["PATH"], **env},
                          capture_output=True, text=True, timeout=30)


def test_the_prefix_unsets_only_names_and_runs_the_line_in_the_given_shell() -> None:
    done = run_prefix('echo "a=${A-gone} b=${B-gone} c=${C-gone} own=${ORION_SHELL_UNSET-gone}${CLAUDE_CODE_SHELL-gone}"; '
                      'echo "$0"',
                      env={"A": "1", "B": "2", "C": "3", "CLAUDE_CODE_SHELL": "/bin/bash",
                           # a word that is not a name never reaches unset (no option, no glob, no command)
                           "ORION_SHELL_UNSET": "A -v C* $(touch${IFS}x) 9Z B"})
    assert done.returncode == 0, done.stderr
    first, shell = done.stdout.splitlines()
    assert first == "a=gone b=gone c=3 own=gonegone"
    assert shell == "/bin/bash"  # the command line ran in CLAUDE_CODE_SHELL


@pytest.mark.parametrize("args", [(), ("echo one", "echo two")])
def test_the_prefix_refuses_anything_but_one_command_line(args: tuple[str, ...]) -> None:
    done = run_prefix(*args, env={"CLAUDE_CODE_SHELL": "/bin/sh"})
    assert done.returncode == 126 and "one command line" in done.stderr


def test_the_users_own_prefix_is_found_where_the_cli_would_find_it(tmp_path: Path, monkeypatch) -> None:
    settings = tmp_path / "settings.json"
    monkeypatch.setenv("ORION_CLAUDE_USER_SETTINGS", str(settings))
    settings.write_text('{"env": {"CLAUDE_CODE_SHELL_PREFIX": "/usr/local/bin/audit-wrap"}}')
    launched = {"CLAUDE_CODE_SHELL_PREFIX": "/opt/env-wrap"}
    assert si.users_own_prefix(["user", "project"], launched) == "/usr/local/bin/audit-wrap"  # settings outrank env
    assert si.users_own_prefix(["project", "local"], launched) == "/opt/env-wrap"  # the user's file is not read
    assert si.users_own_prefix(["project", "local"], {}) is None
    settings.write_text('{"env": {"OTHER": "1"}}')
    assert si.users_own_prefix(["user"], {"CLAUDE_CODE_SHELL_PREFIX": "  "}) is None


def test_the_users_own_prefix_runs_after_the_names_are_gone_with_the_command_as_one_word(tmp_path: Path) -> None:
    wrap = tmp_path / "audit wrap"  # a space in its path: quoted, as the CLI quotes it
    log = tmp_path / "audit.log"
    wrap.write_text(f'#!/bin/sh\nprintf "%s|%s|%s\\n" "$#" "$*" "${{SECRET-gone}}" >> "{log}"\n'
                    'while [ "$1" != "${1#-}" ]; do shift; done\nexec /bin/sh -c "$1"\n')
    wrap.chmod(0o755)
    command = "echo 'it ran'; echo \"$SECRET\""
    for own, expected in ((str(wrap), f"1|{command}|gone"), (f"{wrap} --tag=x", f"2|--tag=x {command}|gone")):
        env = si.flag_env("/unused", "/bin/sh", ["SECRET"], own)
        done = run_prefix(command, env={**env, "SECRET": "s3cret"})
        assert done.returncode == 0 and done.stdout.splitlines() == ["it ran", ""], (done.stdout, done.stderr)
        assert log.read_text().splitlines()[-1] == expected
    from hooks.executors.command import shell_prefix_line

    assert shell_prefix_line("/a/b") == "/a/b \"$1\"" and shell_prefix_line("/x/audit -q") == "/x/audit -q \"$1\""
    # The CLI cuts at the last " -" only: what comes before it is the program, quoted whole.
    assert shell_prefix_line("/x/audit -v -q") == "'/x/audit -v' -q \"$1\""
    assert "ORION_SHELL_NEXT" not in si.flag_env("/p", "/bin/sh", [], "  ")


def test_an_organizations_managed_prefix_outranks_orions_so_the_session_rewrites(tmp_path: Path) -> None:
    """Measured on 2.1.330: a managed settings' CLAUDE_CODE_SHELL_PREFIX runs, the flag settings' does not. Orion's
    prefix would then never run, and env-isolation (which answers nothing when the prefix isolates) would leave the
    variables in: the session rewrites instead."""
    base, drop_in = tmp_path / "managed-settings.json", tmp_path / "10-shell.json"
    base.write_text('{"env": {"CLAUDE_CODE_SHELL_PREFIX": "/opt/org/wrap"}}')
    assert si.managed_prefix([base]) == "/opt/org/wrap"
    drop_in.write_text('{"env": {"CLAUDE_CODE_SHELL_PREFIX": " "}}')  # a later drop-in that empties it wins
    assert si.managed_prefix([base, drop_in]) is None
    assert si.managed_prefix([tmp_path / "absent.json"]) is None
    registry = builtin_registry({}, data_dir=tmp_path, defer=True)
    cli_env = {"PATH": os.environ["PATH"], "SHELL": "/bin/bash"}
    # The CLI's shell is Orion's wrapper then, named as the CLI's own shell (bash here), taking the same names out.
    boxed = si.session_flag_env(registry, box_with_run(), cli_env, environ={}, managed="/opt/org/wrap")
    assert boxed is not None and "CLAUDE_CODE_SHELL_PREFIX" not in boxed
    assert boxed["CLAUDE_CODE_SHELL"] == "/run/orion-shell/orion-bash.sh" and boxed["BASH_ENV"] == ""
    assert boxed["ORION_SHELL_REAL"] == si.cli_shell(cli_env)
    assert {"ANTHROPIC_API_KEY", "ORION_SHELL_REAL"} <= set(boxed["ORION_SHELL_UNSET"].split())
    unboxed = si.session_flag_env(registry, None, {**cli_env, "SHELL": "/usr/bin/zsh"}, environ={},
                                  managed="/opt/org/wrap")
    assert unboxed is not None and os.path.basename(unboxed["CLAUDE_CODE_SHELL"]) in ("orion-bash.sh", "orion-zsh.sh")
    assert os.path.basename(unboxed["CLAUDE_CODE_SHELL"]).removeprefix("orion-").removesuffix(".sh") \
        in os.path.basename(unboxed["ORION_SHELL_REAL"])
    # No place for it (a box without a hidden /run): the rewrite.
    assert si.session_flag_env(registry, box_with_run(()), cli_env, environ={}, managed="/opt/org/wrap") == si.PINNED


def box_with_run(hidden: tuple[str, ...] = ("/run",)) -> object:
    return type("B", (), {"platform": "linux", "plan": type("P", (), {"hidden_dirs": hidden})()})()


def test_the_shell_wrapper_takes_the_names_out_and_becomes_the_real_shell_with_its_arguments(tmp_path: Path) -> None:
    env = si.wrapper_flag_env("/unused", "/bin/bash", ["SECRET"])
    line = 'echo "s=${SECRET-gone} real=${ORION_SHELL_REAL-gone} kind=${BASH_VERSION:+bash}"; echo "$0:$1"'
    done = subprocess.run([str(si.WRAPPER_SCRIPT.parent / "orion-bash.sh"), "-c", line, "zero", "one"],
                          env={"PATH": os.environ["PATH"], **env, "SECRET": "s3cret"}, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0 and done.stdout.splitlines() == ["s=gone real=gone kind=bash", "zero:one"], done
    refused = subprocess.run([str(si.WRAPPER_SCRIPT), "-c", "true"], env={"ORION_SHELL_REAL": "bash"},
                             capture_output=True, text=True, timeout=30)
    assert refused.returncode == 126 and "absolute" in refused.stderr


def test_a_shell_form_hook_runs_through_the_users_prefix_and_the_exec_form_and_powershell_do_not() -> None:
    """Claude Code (2.1.330, read in its code) wraps a hook's command in CLAUDE_CODE_SHELL_PREFIX unless the hook has
    `args` (exec form) or `shell: "powershell"`."""
    from types import SimpleNamespace

    from hooks.executors.command import command_argv

    shell_form = SimpleNamespace(argv=None, command="echo hi", config=None, shell=None)
    assert command_argv(shell_form) == ["/bin/sh", "-c", "echo hi"]
    assert command_argv(shell_form, "/opt/audit wrap") == ["/bin/sh", "-c", "'/opt/audit wrap' \"$1\"", "/bin/sh",
                                                          "echo hi"]
    assert command_argv(shell_form, "  ") == ["/bin/sh", "-c", "echo hi"]
    exec_form = SimpleNamespace(argv=["node", "hook.js", "pre"], command="node", config=None, shell=None)
    assert command_argv(exec_form, "/opt/audit") == ["node", "hook.js", "pre"]
    # The program is cut at the last " -", its option kept as written: `'/bin/sh' -c 'echo hi'`.
    done = subprocess.run(command_argv(shell_form, "/bin/sh -c"), capture_output=True, text=True, timeout=30)
    assert done.stdout == "hi\n", done.stderr


def test_a_users_prefix_runs_in_the_box_only_where_the_box_shows_it(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = type("P", (), {"hidden_dirs": ("/root/.ssh", "/run"), "hidden_files": ("/root/.netrc",)})()
    box = type("B", (), {"platform": "linux", "plan": plan})()
    assert si.seen_in_box("/usr/local/bin/audit", box) and si.seen_in_box("/usr/local/bin/audit -q", box)
    assert si.seen_in_box("audit-wrap", box)  # found on the box's PATH
    assert not si.seen_in_box("/root/.ssh/wrap", box) and not si.seen_in_box("/root/.netrc", box)
    assert not si.seen_in_box("/tmp/wrap -v", box)  # the box's /tmp is its own
    # A link into a hidden folder: its target is what counts.
    monkeypatch.setattr(si.os.path, "realpath", lambda p: "/root/.ssh/wrap" if p == "/opt/link" else p)
    assert not si.seen_in_box("/opt/link", box)
    assert si.seen_in_box("/tmp/wrap", None)  # no boundary: the host's own files
