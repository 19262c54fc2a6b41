"""The conformance cases: one settings file of probe hooks, what each probe does, a scripted model, a prompt.

Each case runs twice, once on the bare bundled CLI (the CLI runs the hooks from
the project's settings itself) and once through `python -m sidecar` (the
sidecar runs them); `tests/conformance/compare.py` says where the two differ.
Tags name probe invocations; `probe.py` records each and behaves as
`behaviours[tag]` says (exit code, stdout, stderr, sleep, signal, env_file).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

BASH = {"tool_use": {"name": "Bash", "input": {"command": "echo tool-ran > ran.txt", "description": "mark"}}}
BASH_ECHO = {"tool_use": {"name": "Bash", "input": {"command": "echo hello-from-bash", "description": "echo"}}}
SLOW_BASH = {"tool_use": {"name": "Bash", "input": {"command": "sleep 1 && echo tool-ran > ran.txt", "description": "slow"}}}
# A tool that runs until a background hook has answered (its probe writes `.claude/hooks/answered`), then a moment
# more for the answer to reach the CLI: the answer comes back inside the turn however loaded the machine.
AWAITING_BASH = {"tool_use": {"name": "Bash", "input": {
    "command": "for i in $(seq 300); do [ -f .claude/hooks/answered ] && break; sleep 0.1; done; sleep 1; "
               "echo tool-ran > ran.txt", "description": "slow"}}}
FINAL = "All done."
# A person answering a permission dialog takes a moment. Through the SDK the CLI asks the host's permission callback
# and runs the PermissionRequest hooks at the same time (the first answer wins); a host that refuses at once beats
# any hook, which no Claude Code user sees: their dialog waits for the hook (Claude Code's documented behaviour).
USER_THINKS_S = 3.0
# what a later command sees of the `env` a changed settings file gives (ConfigChange cases)
SEEN_ENV = [{"tool_use": {"name": "Bash", "input": {"command": "echo \"x=$X_CHANGED\" | tee seen.txt",
                                                    "description": "look"}}}]


@dataclass(slots=True, frozen=True)
class Case:
    name: str
    # {event: [(matcher or None, [tag, ...]), ...]}
    hooks: dict[str, list[tuple[str | None, list[str]]]]
    behaviours: dict[str, dict[str, Any]] = field(default_factory=dict)
    turns: list[Any] = field(default_factory=lambda: [[BASH], FINAL])
    prompt: str = "please do the task"
    timeouts: dict[str, float] = field(default_factory=dict)  # per tag, seconds
    files: dict[str, str] = field(default_factory=dict)  # project-relative path -> text (CLAUDE.md, commands)
    then: tuple[str, ...] = ()  # further prompts in the same session (e.g. "/compact")
    extra_settings: dict[str, Any] = field(default_factory=dict)  # other keys of the project's settings (env, ...)
    allowed_tools: tuple[str, ...] = ("Bash", "Write", "Read", "Edit")
    note: str = ""
    # per tag: keys of the hook entry beside type/command (`args` makes it exec form); see _entry for placeholders
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    default: Any = FINAL  # the scripted model's answer once the turns are used up
    mcp: bool = False  # the project's .mcp.json starts the MCP probe (tests/conformance/mcp_probe.py) as "probe"
    # seconds the session stays open after the last answer, as a user's would: the CLI's fire-and-forget hooks
    # (StopFailure) start after the result record, and closing at once cancels them on some runs
    settle_s: float = 0.0
    # seconds the user of both runs takes before answering a permission prompt (the CLI tells Notification hooks
    # "Claude needs your permission" when a prompt has waited long enough)
    permission_delay_s: float = 0.0
    # Setup's trigger: the reference CLI starts with `--init` / `--maintenance`, the sidecar's session with
    # `_meta.orion.setup` (what a desktop app's "set up this project" or "maintenance" action sends)
    setup: str | None = None
    permission_mode: str | None = None  # the session's permission mode (both runs), e.g. "auto"
    # (name, team): the session works as a member of an agent team; the reference CLI starts as Claude Code starts a
    # teammate's process (`--agent-id name@team --agent-name name --team-name team`), the sidecar's session with
    # `teammate`
    teammate: tuple[str, str] | None = None
    # a folder of the project (relative; made if missing) registered as a working-directory root before the first
    # prompt: the reference through the SDK's `register_repo_root` control request, the sidecar's session with
    # `session/registerRoot`
    register_root: str | None = None
    # the scripted model's rules (tried before the turns): a prompt or agent hook's judge answers by them
    rules: list[dict[str, Any]] = field(default_factory=list)
    # seconds the user of both runs waits before each further prompt (`then`), counted from when every probe that
    # says so (`answered`) has answered
    pause_s: float = 0.0
    # both runs start with the user's own CLAUDE_CODE_SHELL_PREFIX in their environment: a wrapper (harness.WRAPPER)
    # that marks what it runs with CONFORMANCE_WRAPPED=yes
    shell_prefix: bool = False
    # a file the harness writes in the project once the first prompt has answered (both runs): a probe behaviour
    # `wait_for` it makes a background hook answer after the turn, however loaded the machine
    release: str | None = None
    # an organization's managed settings (both runs see them as /etc/claude-code/managed-settings.json, in a mount
    # namespace of their own: tests/managed_settings.py): their hooks, as `hooks` above (tags of the probe), and
    # their other keys (allowManagedHooksOnly, disableAllHooks, allowedHttpHookUrls, ...)
    managed_hooks: dict[str, list[tuple[str | None, list[str]]]] = field(default_factory=dict)
    managed_extra: dict[str, Any] = field(default_factory=dict)

    @property
    def managed(self) -> bool:
        return bool(self.managed_hooks or self.managed_extra)

    @property
    def http(self) -> bool:
        """Some hook of the case posts to the HTTP probe (tests/conformance/http_probe.py)."""
        return any(entry.get("type") == "http" for entry in self.entries.values())

    def settings(self, probe_command: str, http_url: str = "") -> dict[str, Any]:
        return {**self.extra_settings, "hooks": self._hooks(self.hooks, probe_command, http_url)}

    def managed_settings(self, probe_command: str, http_url: str = "") -> dict[str, Any]:
        return {**self.managed_extra, "hooks": self._hooks(self.managed_hooks, probe_command, http_url)}

    def _hooks(self, spec: dict[str, list[tuple[str | None, list[str]]]], probe_command: str,
               http_url: str) -> dict[str, list[dict[str, Any]]]:
        hooks: dict[str, list[dict[str, Any]]] = {}
        for event, groups in spec.items():
            for matcher, tags in groups:
                entries = []
                for tag in tags:
                    entry: dict[str, Any] = _entry(probe_command, tag, self.entries.get(tag, {}), http_url)
                    if tag in self.timeouts:
                        entry["timeout"] = self.timeouts[tag]
                    entries.append(entry)
                group: dict[str, Any] = {"hooks": entries}
                if matcher is not None:
                    group["matcher"] = matcher
                hooks.setdefault(event, []).append(group)
        return hooks

    def scenario(self) -> dict[str, Any]:
        return {"name": self.name, "turns": list(self.turns), "default": self.default, "side_reply": "Scripted title",
                **({"rules": list(self.rules)} if self.rules else {})}


def _entry(probe_command: str, tag: str, fields: dict[str, Any], http_url: str = "") -> dict[str, Any]:
    """A probe's hook entry: shell form `<probe> <tag>` unless `fields` say otherwise. In their strings `<python>`,
    `<script>` (the probe's two words), `<probe>`, `<tag>` and `<http>` (the HTTP probe's address) are filled in;
    `args` makes the entry exec form."""
    python, script = probe_command.split(" ", 1)

    def fill(value: Any) -> Any:
        if isinstance(value, list):
            return [fill(v) for v in value]
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        if not isinstance(value, str):
            return value
        for token, text in (("<python>", python), ("<script>", script), ("<probe>", probe_command), ("<tag>", tag),
                            ("<http>", http_url)):
            value = value.replace(token, text)
        return value

    if fields.get("type") in ("mcp_tool", "prompt", "agent", "http"):
        return {k: fill(v) for k, v in fields.items()}
    return {"type": "command", "command": f"{probe_command} {tag}", **{k: fill(v) for k, v in fields.items()}}


def _exec(*args: str, **more: Any) -> dict[str, Any]:
    """Exec form: the interpreter as `command`, the probe script and the tag first in `args`."""
    return {"command": "<python>", "args": ["<script>", "<tag>", *args], **more}


JUDGE_MARK = "CONFORMANCE-JUDGE"


def _judge(kind: str, **more: Any) -> dict[str, Any]:
    """A `prompt` (or `agent`) hook whose question carries a mark the scripted model's rules answer by."""
    return {"type": kind, "prompt": f"{JUDGE_MARK}: is this safe to do? $ARGUMENTS", **more}


def _verdict(ok: bool, reason: str, *, once: bool = False, **more: Any) -> dict[str, Any]:
    """The scripted model's rule answering a judge's question (a request without tools that carries the mark)."""
    return {"name": "judge", "when": {"any_message_contains": JUDGE_MARK, "has_tools": False},
            "reply": json.dumps({"ok": ok, "reason": reason, **more}), "once": once}


def _agent_verdict(ok: bool, reason: str) -> list[dict[str, Any]]:
    """The scripted model's rules for an `agent` hook's judge: Claude Code's asks for the verdict through its
    StructuredOutput tool, Orion's for a final JSON text (each asked by its own system prompt)."""
    verdict = {"ok": ok, "reason": reason}
    return [{"name": "cli-agent-judge", "when": {"any_message_contains": JUDGE_MARK,
                                                 "system_contains": "hook in Claude Code. Your task is to evaluate"},
             "reply": [{"tool_use": {"name": "StructuredOutput", "input": verdict}}]},
            {"name": "orion-agent-judge", "when": {"any_message_contains": JUDGE_MARK,
                                                   "system_contains": "verification subagent run by a hook"},
             "reply": json.dumps(verdict)}]


def _http(*, port_closed: bool = False, **more: Any) -> dict[str, Any]:
    """An `http` entry posting to the HTTP probe under the tag (tests/conformance/http_probe.py); `port_closed`: to a
    port nothing listens on."""
    url = "http://127.0.0.1:9/hook/<tag>" if port_closed else "<http>/hook/<tag>"
    return {"type": "http", "url": url, **more}


def _mcp(**more: Any) -> dict[str, Any]:
    """An `mcp_tool` entry calling the MCP probe's `hook` tool with the tag, the event and `more` as its input."""
    fields = {k: v for k, v in more.items() if k in ("onFailure", "server", "tool", "timeout", "if")}
    extra = {k: v for k, v in more.items() if k not in fields}
    return {"type": "mcp_tool", "server": "probe", "tool": "hook",
            "input": {"tag": "<tag>", "event": "${hook_event_name}", **extra}, **fields}


# The MCP probe is a project server: the CLI connects it only when the project's settings approve it.
MCP_SETTINGS = {"enableAllProjectMcpServers": True}


def _pre(behaviour: dict[str, Any], **kw: Any) -> Case:
    return Case(hooks={"PreToolUse": [("Bash", ["pre"])]}, behaviours={"pre": behaviour}, **kw)


def _hso(event: str, **fields: Any) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event, **fields}}


CASES: list[Case] = [
    # ---------------------------------------------------------------- PreToolUse exit codes
    Case("pre_exit0_silent", {"PreToolUse": [("Bash", ["pre"])]}),
    Case("pre_exit0_plain_stdout", {"PreToolUse": [("Bash", ["pre"])]}, {"pre": {"stdout": "plain words\n"}}),
    Case("pre_exit2_blocks", {"PreToolUse": [("Bash", ["pre"])]}, {"pre": {"exit": 2, "stderr": "not on my watch"}}),
    # exit 2 with nothing on stderr: the CLI writes "No stderr output" after the command
    Case("pre_exit2_no_stderr", {"PreToolUse": [("Bash", ["pre"])]}, {"pre": {"exit": 2}}),
    Case("pre_exit1_nonblocking", {"PreToolUse": [("Bash", ["pre"])]}, {"pre": {"exit": 1, "stderr": "soft failure"}}),
    Case("pre_exit127", {"PreToolUse": [("Bash", ["pre"])]}, {"pre": {"exit": 127, "stderr": "no such thing"}}),
    Case("pre_killed_by_signal", {"PreToolUse": [("Bash", ["pre"])]}, {"pre": {"signal": 9}}),
    Case("pre_exit2_json_allow_ignored", {"PreToolUse": [("Bash", ["pre"])]},
         {"pre": {"exit": 2, "stderr": "exit two wins", "stdout": _hso("PreToolUse", permissionDecision="allow")}}),
    # ---------------------------------------------------------------- PreToolUse JSON
    Case("pre_json_deny", {"PreToolUse": [("Bash", ["pre"])]},
         {"pre": {"stdout": _hso("PreToolUse", permissionDecision="deny", permissionDecisionReason="denied by policy")}}),
    Case("pre_json_allow", {"PreToolUse": [("Bash", ["pre"])]},
         {"pre": {"stdout": _hso("PreToolUse", permissionDecision="allow", permissionDecisionReason="fine")}},
         allowed_tools=("Read",)),
    Case("pre_json_updated_input", {"PreToolUse": [("Bash", ["pre"])]},
         {"pre": {"stdout": _hso("PreToolUse", permissionDecision="allow",
                                 updatedInput={"command": "echo rewritten > ran.txt", "description": "mark"})}}),
    Case("pre_json_additional_context", {"PreToolUse": [("Bash", ["pre"])]},
         {"pre": {"stdout": _hso("PreToolUse", additionalContext="remember the fence")}}),
    Case("pre_json_defer", {"PreToolUse": [("Bash", ["pre"])]},
         {"pre": {"stdout": _hso("PreToolUse", permissionDecision="defer")}}),
    Case("pre_json_continue_false", {"PreToolUse": [("Bash", ["pre"])]},
         {"pre": {"stdout": {"continue": False, "stopReason": "halted by hook"}}}),
    Case("pre_json_system_message", {"PreToolUse": [("Bash", ["pre"])]},
         {"pre": {"stdout": {"systemMessage": "a notice for the user"}}}),
    Case("pre_json_suppress_output", {"PreToolUse": [("Bash", ["pre"])]},
         {"pre": {"stdout": {"suppressOutput": True}}}),
    Case("pre_brace_not_json", {"PreToolUse": [("Bash", ["pre"])]}, {"pre": {"stdout": "{not json at all"}}),
    Case("pre_legacy_decision_block", {"PreToolUse": [("Bash", ["pre"])]},
         {"pre": {"stdout": {"decision": "block", "reason": "legacy block"}}}),
    # ---------------------------------------------------------------- matchers
    Case("matcher_pipe_list", {"PreToolUse": [("Write|Bash", ["pre"]), ("Read", ["never"])]}),
    Case("matcher_regex", {"PreToolUse": [("^Ba.*", ["pre"]), ("Bas$", ["never"])]}),
    Case("matcher_star_and_empty", {"PreToolUse": [("*", ["star"]), ("", ["empty"]), (None, ["none"])]}),
    # ---------------------------------------------------------------- timeouts
    Case("pre_timeout_fails_open", {"PreToolUse": [("Bash", ["slow"])]}, {"slow": {"sleep": 4}},
         timeouts={"slow": 1}),
    # ---------------------------------------------------------------- PostToolUse
    Case("post_exit0", {"PostToolUse": [("Bash", ["post"])]}),
    Case("post_exit2_stderr_to_model", {"PostToolUse": [("Bash", ["post"])]}, {"post": {"exit": 2, "stderr": "lint failed"}}),
    Case("post_additional_context", {"PostToolUse": [("Bash", ["post"])]},
         {"post": {"stdout": _hso("PostToolUse", additionalContext="output looked odd")}}),
    Case("post_decision_block", {"PostToolUse": [("Bash", ["post"])]},
         {"post": {"stdout": {"decision": "block", "reason": "undo that"}}}),
    Case("post_failure_event", {"PostToolUseFailure": [("Bash", ["fail"])], "PostToolUse": [("Bash", ["post"])]},
         turns=[[{"tool_use": {"name": "Bash", "input": {"command": "exit 3", "description": "fail"}}}], FINAL]),
    # ---------------------------------------------------------------- UserPromptSubmit
    Case("ups_plain_stdout", {"UserPromptSubmit": [(None, ["ups"])]}, {"ups": {"stdout": "context from hook\n"}},
         turns=[FINAL]),
    Case("ups_exit2_blocks_prompt", {"UserPromptSubmit": [(None, ["ups"])]}, {"ups": {"exit": 2, "stderr": "prompt refused"}},
         turns=[FINAL]),
    Case("ups_additional_context", {"UserPromptSubmit": [(None, ["ups"])]},
         {"ups": {"stdout": _hso("UserPromptSubmit", additionalContext="extra context")}}, turns=[FINAL]),
    Case("ups_decision_block", {"UserPromptSubmit": [(None, ["ups"])]},
         {"ups": {"stdout": {"decision": "block", "reason": "blocked prompt"}}}, turns=[FINAL]),
    # ---------------------------------------------------------------- Stop
    Case("stop_exit0", {"Stop": [(None, ["stop"])]}, turns=[FINAL]),
    Case("stop_exit2_continues_once", {"Stop": [(None, ["stop"])]}, {"stop": {"exit": 2, "stderr": "keep going",
                                                                          "unless_stop_hook_active": True}},
         turns=[FINAL, "Second answer."]),
    Case("stop_decision_block", {"Stop": [(None, ["stop"])]}, {"stop": {"stdout": {"decision": "block", "reason": "not yet"},
                                                                      "unless_stop_hook_active": True}},
         turns=[FINAL, "Second answer."]),
    # ---------------------------------------------------------------- session lifecycle
    Case("session_start_plain", {"SessionStart": [(None, ["start"])]}, {"start": {"stdout": "started context\n"}},
         turns=[FINAL]),
    Case("session_start_additional_context", {"SessionStart": [(None, ["start"])]},
         {"start": {"stdout": _hso("SessionStart", additionalContext="session facts")}}, turns=[FINAL]),
    Case("session_end_recorded", {"SessionEnd": [(None, ["end"])]}, turns=[FINAL]),
    Case("claude_env_file", {"SessionStart": [(None, ["start"])]},
         {"start": {"env_file": "export CONFORMANCE_VAR=from-env-file\n"}},
         turns=[[{"tool_use": {"name": "Bash", "input": {"command": "echo value=$CONFORMANCE_VAR",
                                                          "description": "env"}}}], FINAL]),
    # ---------------------------------------------------------------- cwd and several hooks
    Case("cwd_after_cd", {"PreToolUse": [("Bash", ["pre"])]},
         turns=[[{"tool_use": {"name": "Bash", "input": {"command": "mkdir -p sub && cd sub", "description": "cd"}}}],
                [BASH_ECHO], FINAL]),
    Case("two_hooks_one_event", {"PreToolUse": [("Bash", ["first", "second"])]},
         {"first": {"stdout": _hso("PreToolUse", additionalContext="from first")},
          "second": {"stdout": _hso("PreToolUse", additionalContext="from second")}}),
    Case("identical_commands_run_once", {"PreToolUse": [("Bash", ["same"]), ("Bash", ["same"])]}),
    # ---------------------------------------------------------------- the CLI's other events (docs/FIDELITY.md "Events")
    Case("event_post_tool_batch_context", {"PostToolBatch": [(None, ["batch"])]},
         {"batch": {"stdout": _hso("PostToolBatch", additionalContext="the batch is in")}}),
    Case("event_post_tool_batch_exit2", {"PostToolBatch": [(None, ["batch"])]},
         {"batch": {"exit": 2, "stderr": "stop after this batch"}}),
    Case("event_message_display", {"MessageDisplay": [(None, ["display"])]}, turns=["First line.\nSecond line."]),
    Case("event_cwd_changed", {"CwdChanged": [(None, ["cwd"])], "PreToolUse": [("Bash", ["pre"])]},
         turns=[[{"tool_use": {"name": "Bash", "input": {"command": "mkdir -p sub && cd sub", "description": "cd"}}}],
                [BASH_ECHO], FINAL]),
    Case("event_user_prompt_expansion", {"UserPromptExpansion": [(None, ["expand"])],
                                         "UserPromptSubmit": [(None, ["ups"])]},
         {"expand": {"stdout": _hso("UserPromptExpansion", additionalContext="expanded with care")}},
         turns=[FINAL], prompt="/greet world", files={".claude/commands/greet.md": "Say hello to $ARGUMENTS.\n"}),
    Case("event_user_prompt_expansion_exit2", {"UserPromptExpansion": [(None, ["expand"])]},
         {"expand": {"exit": 2, "stderr": "no greetings today"}},
         turns=[FINAL], prompt="/greet world", files={".claude/commands/greet.md": "Say hello to $ARGUMENTS.\n"}),
    Case("event_session_start_after_compact", {"SessionStart": [("compact", ["start"]), ("startup", ["first"])],
                                               "PreCompact": [(None, ["pre"])], "PostCompact": [(None, ["post"])]},
         {"start": {"stdout": _hso("SessionStart", additionalContext="context after compaction")}},
         turns=[FINAL, "Second answer."], then=("/compact", "and now?")),
    Case("event_precompact_exit2_blocks", {"PreCompact": [(None, ["pre"])]},
         {"pre": {"exit": 2, "stderr": "keep the history"}}, turns=[FINAL], then=("/compact",)),
    Case("pre_exit2_stderr_newline_kept", {"PreToolUse": [("Bash", ["pre"])]},
         {"pre": {"exit": 2, "stderr": "first line\nsecond line\n"}}),
    Case("settings_env_reaches_hooks", {"PreToolUse": [("Bash", ["pre"])]},
         extra_settings={"env": {"CONFORMANCE_SETTINGS_VAR": "from-project-settings"}}),
    Case("event_wrong_hook_event_name", {"PreToolUse": [("Bash", ["pre"])]},
         {"pre": {"stdout": _hso("PostToolUse", additionalContext="meant for another event")}}),
    Case("event_permission_request_exit2", {"PermissionRequest": [("Bash", ["perm"])]},
         {"perm": {"exit": 2, "stderr": "not a deny"}}, allowed_tools=("Read",)),
    Case("event_permission_request_allow", {"PermissionRequest": [("Bash", ["perm"])]},
         {"perm": {"stdout": _hso("PermissionRequest", decision={"behavior": "allow"})}}, allowed_tools=("Read",),
         permission_delay_s=USER_THINKS_S, turns=[[{"tool_use": {"name": "Bash", "input": {"command": "rm -f no-such-file.txt",
                                                          "description": "remove"}}}], FINAL]),
    # ---------------------------------------------------------------- command hook fields (docs/HOOKS.md "command")
    Case("command_exec_form_blocks_force_push", {"PreToolUse": [("Bash", ["guard"])]},
         {"guard": {"exit": 2, "stderr": "force pushes are not allowed here"}},
         entries={"guard": _exec("dangerous-command-blocker")},
         turns=[[{"tool_use": {"name": "Bash", "input": {"command": "git push --force origin main",
                                                         "description": "push"}}}], FINAL]),
    Case("command_exec_form_args_verbatim", {"PreToolUse": [("Bash", ["argv"])]}, {"argv": {"echo_argv": True}},
         entries={"argv": {"command": "<python>",
                           "args": ["${CLAUDE_PROJECT_DIR}/.claude/hooks/probe.py", "<tag>", "$HOME", "${HOME}",
                                    "${CLAUDE_PROJECT_DIR}/x", "a b;echo injected", "`id`", "*.py", ""]}}),
    Case("command_exec_form_identity", {"PreToolUse": [("Bash", ["a", "b"]), ("Bash", ["a"])]},
         entries={"a": _exec("same"), "b": _exec("other")}),
    # The user's own CLAUDE_CODE_SHELL_PREFIX: Claude Code runs the agent's commands and the shell-form hooks
    # through it, not the exec form (docs/FIDELITY.md "env-isolation without a rewrite")
    Case("command_user_shell_prefix", {"PreToolUse": [("Bash", ["shell", "execform"])], "PostToolUse": [
        ("Bash", ["post"])]}, entries={"execform": _exec()}, shell_prefix=True,
         turns=[[{"tool_use": {"name": "Bash", "input": {"command": "echo \"wrapped=${CONFORMANCE_WRAPPED:-no}\"",
                                                         "description": "look"}}}], FINAL]),
    Case("command_shell_default_is_sh", {"PreToolUse": [("Bash", ["shell"])]},
         entries={"shell": {"command": "<probe> <tag>-${BASH_VERSION:+bash}"}}),
    Case("command_shell_bash", {"PreToolUse": [("Bash", ["shell"])]},
         entries={"shell": {"command": "<probe> <tag>-${BASH_VERSION:+bash}", "shell": "bash"}}),
    Case("command_shell_powershell_missing", {"PreToolUse": [("Bash", ["pwsh", "after"])]},
         entries={"pwsh": {"shell": "powershell"}}),
    Case("command_if_conditions", {"PreToolUse": [("*", ["git", "npm", "write", "anybash", "echo", "glob"])],
                                   "PostToolUse": [("Bash", ["postgit", "postnpm"])],
                                   "UserPromptSubmit": [(None, ["upsif", "ups"])]},
         entries={"git": {"if": "Bash(git *)"}, "npm": {"if": "Bash(npm *)"}, "write": {"if": "Write"},
                  "anybash": {"if": "Bash"}, "echo": {"if": "Bash(echo:*)"}, "glob": {"if": "Bash(*--version)"},
                  "postgit": {"if": "Bash(git *)"}, "postnpm": {"if": "Bash(npm *)"}, "upsif": {"if": "Bash"}},
         turns=[[{"tool_use": {"name": "Bash", "input": {"command": "echo start && git --version > ran.txt",
                                                         "description": "git"}}}], FINAL]),
    Case("command_once_in_settings", {"PreToolUse": [("Bash", ["once"])]}, entries={"once": {"once": True}},
         turns=[[BASH], [BASH_ECHO], FINAL]),
    # async hooks start beside a tool call that takes a second, so the CLI does not end the session before they run
    Case("command_async_context", {"PreToolUse": [("Bash", ["bg"])]},
         {"bg": {"stdout": _hso("PreToolUse", additionalContext="from the background"), "answered": "answered"}},
         entries={"bg": {"async": True}}, turns=[[AWAITING_BASH], FINAL]),
    Case("command_async_exit2", {"PreToolUse": [("Bash", ["bg"])]}, {"bg": {"exit": 2, "stderr": "too late to block"}},
         entries={"bg": {"async": True}}, turns=[[SLOW_BASH], FINAL]),
    Case("command_async_rewake", {"PreToolUse": [("Bash", ["rewake"])]},
         {"rewake": {"exit": 2, "stderr": "the tests fail after that change", "answered": "answered"}},
         entries={"rewake": {"asyncRewake": True}}, turns=[[AWAITING_BASH], FINAL, "Woken up."]),
    # A PreToolUse hook's ask opens the permission dialog, and the PermissionRequest hooks run on it (the user of both
    # runs then rejects the call); their input is the CLI's for any dialog.
    Case("pre_ask_runs_permission_request", {"PreToolUse": [("Bash", ["ask"])], "PermissionRequest": [("Bash", ["pr"])]},
         {"ask": {"stdout": _hso("PreToolUse", permissionDecision="ask", permissionDecisionReason="check this one")}},
         permission_delay_s=USER_THINKS_S),
    # A background hook that answers after the turn ended: its context waits for the next prompt; an asyncRewake
    # exit 2 wakes the model in a turn of its own (hooks/late_answers.py).
    Case("command_async_context_between_prompts", {"PreToolUse": [("Bash", ["bg"])]},
         {"bg": {"wait_for": "released", "stdout": _hso("PreToolUse", additionalContext="came back after the turn"),
                 "answered": "answered"}},
         entries={"bg": {"async": True}}, turns=[[BASH], FINAL, "Second answer."], then=("and now?",), pause_s=3,
         release="released"),
    Case("command_async_rewake_after_turn", {"PreToolUse": [("Bash", ["rewake"])]},
         {"rewake": {"wait_for": "released", "exit": 2, "stderr": "the build broke after the turn"}},
         entries={"rewake": {"asyncRewake": True}}, turns=[[BASH], FINAL, "Woken up."], settle_s=6,
         release="released"),
    Case("command_status_message", {"PreToolUse": [("Bash", ["status"])]},
         {"status": {"stdout": _hso("PreToolUse", additionalContext="checked")}},
         entries={"status": {"statusMessage": "Checking the command\u2026"}}),
]

CASES += [
    # ---------------------------------------------------------------- more of the CLI's events (docs/FIDELITY.md)
    # InstructionsLoaded (CLAUDE.md at session start): the CLI fires it while it boots, and through the SDK it
    # reaches a callback only when the SDK's initialize came first (measured both ways); the sidecar fires the
    # session-start loads itself, at the CLI's moment and with its input (docs/FIDELITY.md).
    Case("event_instructions_loaded", {"InstructionsLoaded": [(None, ["loaded"])], "SessionStart": [(None, ["start"])]},
         files={"CLAUDE.md": "Project rules: keep answers short.\n", ".claude/CLAUDE.md": "More rules.\n"},
         turns=[FINAL]),
    Case("event_instructions_rules", {"InstructionsLoaded": [(None, ["loaded"])]},
         files={"CLAUDE.md": "Project rules: keep answers short.\n", ".claude/CLAUDE.md": "More rules.\n",
                ".claude/rules/style.md": "Use four spaces.\n",
                ".claude/rules/a-first.md": "Name things plainly.\n",
                ".claude/rules/b/testing.md": "Tests live in tests/.\n",
                ".claude/rules/z/deep/docs.md": "Docs are short.\n",
                ".claude/rules/notes.txt": "not a rule\n",
                ".claude/rules/api.md": "---\npaths:\n  - \"src/api/**\"\n---\nAPI handlers return JSON.\n",
                "src/api/handler.py": "def handle():\n    return {}\n"},
         turns=[[{"tool_use": {"name": "Read", "input": {"file_path": "src/api/handler.py"}}}], FINAL]),
    Case("event_task_created_completed", {"TaskCreated": [(None, ["created"])], "TaskCompleted": [(None, ["completed"])]},
         turns=[[{"tool_use": {"name": "TaskCreate", "input": {"subject": "Write the notes",
                                                                 "description": "Put the notes in notes.txt",
                                                                 "activeForm": "Writing the notes"}}}],
                [{"tool_use": {"name": "TaskUpdate", "input": {"taskId": "1", "status": "completed"}}}], FINAL],
         allowed_tools=("Bash", "TaskCreate", "TaskUpdate", "TaskList")),
    Case("event_task_created_exit2", {"TaskCreated": [(None, ["created"])]},
         {"created": {"exit": 2, "stderr": "tasks need an owner"}},
         turns=[[{"tool_use": {"name": "TaskCreate", "input": {"subject": "Write the notes",
                                                                 "description": "Put the notes in notes.txt"}}}], FINAL],
         allowed_tools=("Bash", "TaskCreate", "TaskUpdate", "TaskList")),
    # A member of an agent team (the session started as Claude Code starts a teammate's process): TeammateIdle as its
    # turn ends; exit 2 keeps it working, the hook's stderr as its feedback
    Case("event_teammate_idle", {"TeammateIdle": [(None, ["idle"])], "Stop": [(None, ["stop"])]},
         teammate=("helper", "crew"), turns=[FINAL], settle_s=3.0),
    Case("event_teammate_idle_exit2", {"TeammateIdle": [(None, ["idle"])]},
         {"idle": {"exit": 2, "stderr": "the task list still has work for you", "first_only": True}},
         teammate=("helper", "crew"), turns=[FINAL, "Second answer."], settle_s=3.0),
    # A nested folder registered as a working-directory root (a monorepo's package): DirectoryAdded, its matcher
    # tested against the source (a slash_command group stays silent)
    Case("event_directory_added", {"DirectoryAdded": [("register_repo_root", ["added"]),
                                                      ("slash_command", ["slash"])]},
         register_root="packages/api", turns=[FINAL], settle_s=2.0),
    Case("event_worktree_create", {"WorktreeCreate": [(None, ["create"])], "WorktreeRemove": [(None, ["remove"])]},
         {"create": {"stdout": "<PROJECT>/wt"}},
         turns=[[{"tool_use": {"name": "EnterWorktree", "input": {"name": "feature-x"}}}],
                [{"tool_use": {"name": "ExitWorktree", "input": {"action": "remove", "discard_changes": True}}}], FINAL],
         files={"wt/readme.txt": "a worktree\n"},
         allowed_tools=("Bash", "EnterWorktree", "ExitWorktree")),
    Case("event_stop_failure", {"StopFailure": [("rate_limit", ["failed"]), ("server_error", ["not-this-error"])],
                                 "Stop": [(None, ["stop"])]},
         turns=[{"error": {"status": 429, "type": "rate_limit_error", "message": "slow down, scripted"}}],
         extra_settings={"env": {"CLAUDE_CODE_MAX_RETRIES": "0"}},
         settle_s=2.0,
         note="an API error ends the turn: StopFailure instead of Stop (no retries, so it ends at once)"),
    Case("event_notification_permission_prompt", {"Notification": [("permission_prompt", ["notify"]),
                                                                  ("idle_prompt", ["not-this-kind"])]},
         allowed_tools=("Read",), permission_delay_s=12.0,
         note="a permission prompt left waiting: the CLI's own timer tells Notification hooks (permission_prompt)"),
    Case("event_setup_init", {"Setup": [("init", ["setup"]), ("maintenance", ["not-this-trigger"])],
                              "SessionStart": [(None, ["start"])]},
         setup="init", note="a session started to set the project up: Setup (init) after SessionStart"),
    Case("event_setup_context", {"Setup": [(None, ["setup"])]},
         {"setup": {"stdout": _hso("Setup", additionalContext="the toolchain is installed")}},
         setup="maintenance", note="Setup (maintenance) context reaches the model with the first prompt"),
    Case("event_permission_denied", {"PermissionDenied": [("Bash", ["denied"]), ("Write", ["not-this-tool"])]},
         turns=[[{"tool_use": {"name": "Bash", "input": {"command": "rm -rf /tmp/orion-conformance-nothing-here",
                                                         "description": "clean up"}}}], FINAL],
         allowed_tools=("Read",), permission_mode="auto",
         note="auto mode with a model server that does not run its safety check (a gateway; offline): the CLI denies"
              " the call the rules do not settle and tells PermissionDenied hooks"),
    Case("event_config_change", {"ConfigChange": [(None, ["config"])]},
         turns=[[{"tool_use": {"name": "Bash", "input": {
             "command": "sleep 1 && python3 -c \"import json; p = '.claude/settings.json'; d = json.load(open(p)); "
                        "d['env'] = {'X_CHANGED': '1'}; json.dump(d, open(p, 'w'))\" && sleep 3",
             "description": "change the project's settings"}}}], SEEN_ENV, FINAL],
         note="a settings file changed mid-session by a command (the CLI skips its own writes)"),
    Case("event_config_change_exit2", {"ConfigChange": [("project_settings", ["config"])]},
         {"config": {"exit": 2, "stderr": "settings are frozen"}},
         turns=[[{"tool_use": {"name": "Bash", "input": {
             "command": "sleep 1 && python3 -c \"import json; p = '.claude/settings.json'; d = json.load(open(p)); "
                        "d['env'] = {'X_CHANGED': '1'}; json.dump(d, open(p, 'w'))\" && sleep 3",
             "description": "change the project's settings"}}}], SEEN_ENV, FINAL]),
    Case("event_subagent_start_stop", {"SubagentStart": [(None, ["substart"])], "SubagentStop": [(None, ["substop"])],
                                       "PreToolUse": [(None, ["pre"])]},
         turns=[[{"tool_use": {"name": "Agent", "input": {"description": "look around", "prompt": "Say hello.",
                                                          "subagent_type": "general-purpose",
                                                          "run_in_background": False}}}], FINAL],
         allowed_tools=("Bash", "Write", "Read", "Edit", "Agent", "Task")),
    Case("event_model_switch", {"PreModelSwitch": [(None, ["premodel"])], "PostModelSwitch": [(None, ["postmodel"])]},
         turns=[FINAL, "Second answer."], then=("/model claude-haiku-4-5", "and now?")),
    Case("event_elicitation", {"Elicitation": [(None, ["elicit"])], "ElicitationResult": [(None, ["result"])]},
         {"elicit": {"stdout": _hso("Elicitation", action="accept", content={"colour": "teal"})}},
         turns=[[{"tool_use": {"name": "mcp__probe__ask", "input": {}}}], FINAL], mcp=True,
         extra_settings=MCP_SETTINGS, allowed_tools=("Bash", "mcp__probe__ask")),
    Case("event_elicitation_unanswered", {"Elicitation": [(None, ["elicit"])],
                                          "ElicitationResult": [(None, ["result"])]},
         {"result": {"stdout": _hso("ElicitationResult", additionalContext="seen")}},
         turns=[[{"tool_use": {"name": "mcp__probe__ask", "input": {}}}], FINAL], mcp=True,
         extra_settings=MCP_SETTINGS, allowed_tools=("Bash", "mcp__probe__ask")),
    Case("event_notification_elicitation", {"Notification": [("elicitation_response", ["notify"])]},
         turns=[[{"tool_use": {"name": "mcp__probe__ask", "input": {}}}], FINAL], mcp=True,
         extra_settings=MCP_SETTINGS, allowed_tools=("Bash", "mcp__probe__ask"),
         note="an MCP server's question, answered by the user: the CLI tells Notification hooks (elicitation_response)"),
    Case("event_file_changed_matcher", {"FileChanged": [("watched.txt", ["changed"])]},
         turns=[[{"tool_use": {"name": "Bash", "input": {"command": "echo new > watched.txt && sleep 2",
                                                         "description": "touch"}}}], FINAL],
         files={"watched.txt": "old\n"}),
    Case("event_file_changed", {"SessionStart": [(None, ["start"])], "FileChanged": [(None, ["changed"])]},
         {"start": {"stdout": _hso("SessionStart", watchPaths=["<PROJECT>/watched.txt"])}},
         turns=[[{"tool_use": {"name": "Bash", "input": {"command": "echo new > watched.txt && sleep 2",
                                                         "description": "touch"}}}], FINAL],
         files={"watched.txt": "old\n"}),
]

CASES += [
    # ---------------------------------------------------------------- mcp_tool hooks (docs/HOOKS.md "mcp_tool")
    # ---------------------------------------------------------------- prompt, agent and http hooks
    Case("prompt_hook_blocks", {"PreToolUse": [("Bash", ["judge"])]},
         entries={"judge": _judge("prompt")}, rules=[_verdict(False, "the judge says this command is not safe")]),
    Case("prompt_hook_allows", {"PreToolUse": [("Bash", ["judge"])]},
         entries={"judge": _judge("prompt")}, rules=[_verdict(True, "fine by the judge")]),
    Case("prompt_hook_stop_continues", {"Stop": [(None, ["judge"])]},
         entries={"judge": _judge("prompt")}, rules=[_verdict(False, "the tests were not run yet", once=True)],
         turns=[FINAL, "Second answer."]),
    # A prompt over 500 characters is named whole in its first refusal, shortened in any later one in the same
    # conversation (the turn goes on: continueOnBlock).
    Case("prompt_hook_long_prompt_named_twice", {"PreToolUse": [("Bash", ["judge"])]},
         entries={"judge": {"type": "prompt", "continueOnBlock": True,
                            "prompt": f"{JUDGE_MARK}: " + "Check that the command keeps the build reproducible. " * 12
                                      + "$ARGUMENTS"}},
         rules=[_verdict(False, "the command is not pinned")], turns=[[BASH], [BASH], FINAL]),
    # A Stop judge that finds its condition can never hold (`impossible`): the agent stops, no feedback, no loop.
    Case("prompt_hook_stop_impossible", {"Stop": [(None, ["judge"])]},
         entries={"judge": _judge("prompt")},
         rules=[_verdict(False, "there is no test suite to run", once=True, impossible=True)],
         turns=[FINAL, "Second answer."]),
    Case("agent_hook_blocks", {"PreToolUse": [("Bash", ["judge"])]},
         entries={"judge": _judge("agent")}, rules=_agent_verdict(False, "the agent found no test for this")),
    Case("http_hook_deny", {"PreToolUse": [("Bash", ["web"])]},
         {"web": {"http_body": _hso("PreToolUse", permissionDecision="deny",
                                    permissionDecisionReason="the policy server says no")}},
         entries={"web": _http()}),
    Case("http_hook_context", {"UserPromptSubmit": [(None, ["web"])], "PostToolUse": [("Bash", ["post"])]},
         {"web": {"http_body": _hso("UserPromptSubmit", additionalContext="context from the policy server")},
          "post": {"http_body": _hso("PostToolUse", additionalContext="the server saw the command")}},
         entries={"web": _http(), "post": _http()}),
    Case("http_hook_error_status_continues", {"PreToolUse": [("Bash", ["web"])]},
         {"web": {"http_status": 500, "http_body": "the policy server fell over"}}, entries={"web": _http()}),
    Case("http_hook_error_blocks", {"PreToolUse": [("Bash", ["web"])]},
         {"web": {"http_status": 500, "http_body": "the policy server fell over"}},
         entries={"web": _http(onFailure="block")}),
    Case("http_hook_unreachable_blocks", {"PreToolUse": [("Bash", ["web"])]},
         entries={"web": _http(port_closed=True, onFailure="block")}),
    # A URL with a secret in its query: named by its bare address; what the cause says of the URL is its bare address
    Case("http_hook_secret_url_error_blocks", {"PreToolUse": [("Bash", ["web"])]},
         {"web": {"http_status": 500, "http_body": "the policy server fell over"}},
         entries={"web": {"type": "http", "url": "<http>/hook/<tag>?token=s3cret-value#part", "onFailure": "block"}}),
    Case("http_hook_secret_url_unreachable_blocks", {"PreToolUse": [("Bash", ["web"])]},
         entries={"web": {"type": "http", "url": "http://127.0.0.1:9/hook/<tag>?token=s3cret-value",
                          "onFailure": "block"}}),
    Case("http_hook_timeout_blocks", {"PreToolUse": [("Bash", ["web"])]},
         {"web": {"http_sleep": 4, "http_body": "{}"}}, entries={"web": _http(onFailure="block")},
         timeouts={"web": 1}),
    Case("http_hook_plain_body", {"PreToolUse": [("Bash", ["web"])], "UserPromptSubmit": [(None, ["ups"])]},
         {"web": {"http_body": "plain words, not JSON"}, "ups": {"http_body": "plain words for the prompt"}},
         entries={"web": _http(), "ups": _http()}),
    Case("http_hook_unreachable", {"PreToolUse": [("Bash", ["web"])]}, entries={"web": _http(port_closed=True)}),
    Case("mcp_tool_deny", {"PreToolUse": [("Bash", ["judge"])]},
         {"judge": {"answer": _hso("PreToolUse", permissionDecision="deny",
                                   permissionDecisionReason="the MCP judge says no")}},
         entries={"judge": _mcp()}, mcp=True, extra_settings=MCP_SETTINGS),
    Case("mcp_tool_context_and_interpolation", {"PreToolUse": [("Bash", ["judge"])]},
         {"judge": {"answer": _hso("PreToolUse", additionalContext="the MCP judge looked")}},
         entries={"judge": _mcp(command="${tool_input.command}", both="[${tool_name}] ${tool_input.description}",
                                missing="${tool_input.nothing_here}", whole="${tool_input}", number=7,
                                nested={"deep": "${tool_name}"}, listed=["${tool_name}"])},
         mcp=True, extra_settings=MCP_SETTINGS),
    Case("mcp_tool_plain_text", {"PreToolUse": [("Bash", ["judge"])], "UserPromptSubmit": [(None, ["ups"])]},
         {"judge": {"answer": "plain words from the judge"}, "ups": {"answer": "plain words for the prompt"}},
         entries={"judge": _mcp(), "ups": _mcp()}, mcp=True, extra_settings=MCP_SETTINGS),
    Case("mcp_tool_prompt_json_and_empty", {"UserPromptSubmit": [(None, ["context", "empty", "braces"])]},
         {"context": {"answer": _hso("UserPromptSubmit", additionalContext="context from the MCP judge")},
          "empty": {"answer": ""}, "braces": {"answer": "{}"}},
         entries={"context": _mcp(), "empty": _mcp(), "braces": _mcp()}, mcp=True, extra_settings=MCP_SETTINGS,
         turns=[FINAL]),
    Case("mcp_tool_prompt_empty", {"UserPromptSubmit": [(None, ["empty"])]}, {"empty": {"answer": ""}},
         entries={"empty": _mcp()}, mcp=True, extra_settings=MCP_SETTINGS, turns=[FINAL]),
    Case("mcp_tool_prompt_braces", {"UserPromptSubmit": [(None, ["braces"])]}, {"braces": {"answer": "{}"}},
         entries={"braces": _mcp()}, mcp=True, extra_settings=MCP_SETTINGS, turns=[FINAL]),
    Case("mcp_tool_two_blocks", {"UserPromptSubmit": [(None, ["ups"])]},
         {"ups": {"blocks": ["first block", "second block"]}},
         entries={"ups": _mcp()}, mcp=True, extra_settings=MCP_SETTINGS, turns=[FINAL]),
    Case("mcp_tool_structured", {"UserPromptSubmit": [(None, ["ups"])], "PreToolUse": [("Bash", ["judge"])]},
         {"ups": {"structured": {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                                        "additionalContext": "from structured content"}},
                  "text": "the text block beside it"},
          "judge": {"structured": _hso("PreToolUse", permissionDecision="deny",
                                       permissionDecisionReason="structured deny")}},
         entries={"ups": _mcp(), "judge": _mcp()}, mcp=True, extra_settings=MCP_SETTINGS),
    # what a tool of the MCP SDKs that returns a string sends: the string as text, and {"result": string} structured
    Case("mcp_tool_sdk_string_result", {"PreToolUse": [("Bash", ["judge"])]},
         {"judge": {"structured": {"result": json.dumps(_hso("PreToolUse", permissionDecision="deny",
                                                             permissionDecisionReason="a string said no"))},
                    "text": json.dumps(_hso("PreToolUse", permissionDecision="deny",
                                            permissionDecisionReason="a string said no"))}},
         entries={"judge": _mcp()}, mcp=True, extra_settings=MCP_SETTINGS),
    Case("mcp_tool_error_blocks_permission_request", {"PermissionRequest": [("Bash", ["judge"])]},
         {"judge": {"error": "the judge fell over"}}, entries={"judge": _mcp(onFailure="block")}, mcp=True,
         extra_settings=MCP_SETTINGS, allowed_tools=("Read",), permission_delay_s=USER_THINKS_S),
    Case("mcp_tool_error_continues", {"PreToolUse": [("Bash", ["judge"])]},
         {"judge": {"error": "the judge fell over"}}, entries={"judge": _mcp()}, mcp=True,
         extra_settings=MCP_SETTINGS),
    Case("mcp_tool_error_blocks", {"PreToolUse": [("Bash", ["judge"])]},
         {"judge": {"error": "the judge fell over"}}, entries={"judge": _mcp(onFailure="block")}, mcp=True,
         extra_settings=MCP_SETTINGS),
    Case("mcp_tool_block_needs_hook_json", {"PreToolUse": [("Bash", ["judge"])]},
         {"judge": {"answer": "plain words are not an answer"}}, entries={"judge": _mcp(onFailure="block")},
         mcp=True, extra_settings=MCP_SETTINGS),
    Case("mcp_tool_unknown_server_blocks", {"PreToolUse": [("Bash", ["after", "ghost"])]},
         entries={"ghost": _mcp(server="nowhere", onFailure="block")}, mcp=True, extra_settings=MCP_SETTINGS),
    Case("mcp_tool_unknown_tool_continues", {"PreToolUse": [("Bash", ["ghost", "after"])]},
         entries={"ghost": _mcp(tool="no_such_tool")}, mcp=True, extra_settings=MCP_SETTINGS),
]

# mcp_tool hooks' calls that time out, and an image in the answer (round 11: "not recorded" before)
PNG_1PX = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
CASES += [
    Case("mcp_tool_timeout_continues", {"PreToolUse": [("Bash", ["slow", "after"])]},
         {"slow": {"sleep": 8, "answer": "too late"}}, entries={"slow": _mcp(timeout=2)}, mcp=True,
         extra_settings=MCP_SETTINGS),
    Case("mcp_tool_timeout_blocks", {"PreToolUse": [("Bash", ["slow"])]},
         {"slow": {"sleep": 8, "answer": "too late"}}, entries={"slow": _mcp(timeout=2, onFailure="block")}, mcp=True,
         extra_settings=MCP_SETTINGS),
    Case("mcp_tool_stop_ignores_on_failure", {"Stop": [(None, ["judge"])]},
         {"judge": {"error": "the judge fell over"}}, entries={"judge": _mcp(onFailure="block")}, mcp=True,
         extra_settings=MCP_SETTINGS, turns=[FINAL]),
    Case("mcp_tool_image_block", {"UserPromptSubmit": [(None, ["judge"])]},
         {"judge": {"blocks": ["the picture shows a cat", {"type": "image", "data": PNG_1PX, "mimeType": "image/png"}]}},
         entries={"judge": _mcp()}, mcp=True, extra_settings=MCP_SETTINGS, turns=[FINAL]),
]

# An organization's managed settings (round 11): the CLI runs their hooks itself under the sidecar too (Orion's flag
# settings cannot switch them off), so what is compared is what runs beside them: the project's hooks, the policy's
# switches, and what the model reads of a managed hook's block.
ORG_BASH = {"PreToolUse": [("Bash", ["org"])]}
CASES += [
    Case("managed_hook_runs_beside_the_projects", {"PreToolUse": [("Bash", ["proj"])],
                                                   "UserPromptSubmit": [(None, ["proj_prompt"])]},
         managed_hooks={**ORG_BASH, "UserPromptSubmit": [(None, ["org_prompt"])]}),
    Case("managed_allow_managed_hooks_only", {"PreToolUse": [("Bash", ["proj"])], "Stop": [(None, ["proj_stop"])]},
         managed_hooks=ORG_BASH, managed_extra={"allowManagedHooksOnly": True}),
    Case("managed_disable_all_hooks", {"PreToolUse": [("Bash", ["proj"])], "Stop": [(None, ["proj_stop"])]},
         managed_hooks=ORG_BASH, managed_extra={"disableAllHooks": True}),
    Case("managed_hook_exit2_blocks", {"PostToolUse": [("Bash", ["proj_post"])]},
         {"org": {"exit": 2, "stderr": "the organization does not allow this"}}, managed_hooks=ORG_BASH),
    Case("managed_project_disable_all_hooks_leaves_managed", {"PreToolUse": [("Bash", ["proj"])]},
         managed_hooks=ORG_BASH, extra_settings={"disableAllHooks": True}),
    Case("managed_plugin_only_customization_of_hooks", {"PreToolUse": [("Bash", ["proj"])],
                                                        "UserPromptSubmit": [(None, ["proj_prompt"])]},
         managed_hooks=ORG_BASH, managed_extra={"strictPluginOnlyCustomization": ["hooks"]}),
    Case("managed_env_reaches_hooks", {"PreToolUse": [("Bash", ["proj"])]},
         extra_settings={"env": {"CONFORMANCE_SETTINGS_VAR": "from the project"}},
         managed_extra={"env": {"CONFORMANCE_SETTINGS_VAR": "from the organization"}}),
    Case("managed_http_urls_narrow_the_projects", {"PreToolUse": [("Bash", ["web", "proj"])]},
         entries={"web": _http()}, managed_extra={"allowedHttpHookUrls": ["https://hooks.example.org/*"]}),
]

BY_NAME = {case.name: case for case in CASES}

# Cases where the sidecar differs from the CLI, and why: each difference must contain its marker (and nothing else
# may differ in that case). Through the SDK, hooks reach the CLI as callbacks, and the CLI words a callback's
# answer with its own name ("callback", "Stop:Callback") where a command hook's answer names the command, and calls
# no SessionStart callback at all (docs/FIDELITY.md).
KNOWN_DIFFERENCES: dict[str, tuple[str, str]] = {
    "post_exit2_stderr_to_model": ('from command: \\"callback\\"', "the CLI names an SDK callback \"callback\""),
    "post_decision_block": ('from command: \\"callback\\"', "the CLI names an SDK callback \"callback\""),
    "stop_decision_block": ("Stop:Callback hook blocking error", "the CLI names an SDK callback \"callback\""),
    "stop_exit2_continues_once": ("Stop:Callback hook blocking error",
                                  "for a callback's block the CLI adds a system message beside the feedback"),
    "event_teammate_idle_exit2": ("TeammateIdle:Callback hook blocking error",
                                  "for a callback's block the CLI adds a system message beside the feedback"),
    "prompt_hook_stop_continues": ("Stop:Callback hook blocking error",
                                   "for a callback's block the CLI adds a system message beside the feedback"),
    "ups_plain_stdout": ("UserPromptSubmit hook additional context: context from hook",
                         "a callback cannot give plain stdout: it arrives as additional context"),
    "session_start_plain": ("SessionStart:startup hook success",
                            "the CLI calls no SessionStart callback: the context goes with the first prompt"),
    "session_start_additional_context": ("SessionStart hook additional context",
                                         "the CLI calls no SessionStart callback: the context goes with the first prompt"),
    "ups_exit2_blocks_prompt": ("stop_reason: CLI None vs ours 'blocked'", "Orion tells the frontend a hook blocked the prompt"),
    "ups_decision_block": ("stop_reason: CLI None vs ours 'blocked'", "Orion tells the frontend a hook blocked the prompt"),
    "event_user_prompt_expansion_exit2": ("stop_reason: CLI None vs ours 'blocked'",
                                          "Orion tells the frontend a hook blocked the prompt"),
    "event_session_start_after_compact": ("[callback] completed successfully",
                                          "the CLI names an SDK callback \"callback\" in /compact's report"),
    "event_precompact_exit2_blocks": ("stop_reason: CLI None vs ours 'blocked'",
                                      "Orion tells the frontend a hook blocked the prompt"),
    "command_async_context": ('ours …"[MESSAGE FROM NON-USER SOURCE - NOT USER INPUT]\\nfrom the background"',
                              "an async hook's answer reaches the model in the next request, as in the CLI, but "
                              "through the SDK's synthetic message, which the CLI frames as not the user's input "
                              "(the CLI's own attachment has no frame; docs/FIDELITY.md)"),
    "command_async_rewake": ('ours …"[MESSAGE FROM NON-USER SOURCE - NOT USER INPUT]\\nStop hook blocking error from '
                             'command \\"PreToolUse:Bash\\": the tests fail after that change"',
                             "an asyncRewake hook's exit 2 reaches the model in the CLI's words, framed as a message "
                             "from no user where the CLI frames it as a background task's notification (a host "
                             "cannot send that frame; docs/FIDELITY.md)"),
    "command_async_context_between_prompts": (
        'ours …"[MESSAGE FROM NON-USER SOURCE - NOT USER INPUT]\\ncame back after the turn\\n"',
        "an async answer that comes back after the turn reaches the model with the next prompt, as in the CLI; "
        "the CLI puts it after the prompt as a system message, the SDK's synthetic message goes before it, framed "
        "as not the user's input (docs/FIDELITY.md)"),
    "command_async_rewake_after_turn": (
        'ours …"[MESSAGE FROM NON-USER SOURCE - NOT USER INPUT]\\nStop hook blocking error from command '
        '\\"PreToolUse:Bash\\": the build broke after the turn"',
        "an asyncRewake exit 2 after the turn wakes the model in a turn of its own, as in the CLI, with the CLI's "
        "words framed as a message from no user (docs/FIDELITY.md)"),
    # A URL with a secret in it (deliberate): the CLI names an onFailure-"block" http hook by its URL as written and
    # passes the cause on as is, so the model reads (and the provider and the transcript keep) the query's token;
    # Orion names the bare address and withholds the cause (docs/SECURITY.md).
    **{name: ('ours {"tool_result": "PreToolUse:Bash hook error: [http://127.0.0.1:<PORT>/hook/web]: failed; '
              'blocking because onFailure is \\"block\\"\\nError details are hidden',
              "deliberate: a secret in a hook's URL never reaches the model (the CLI writes the URL and the cause "
              "as they are)")
       for name in ("http_hook_secret_url_error_blocks", "http_hook_secret_url_unreachable_blocks")},
    # mcp_tool hooks (hooks/executors/mcp_tool.py)
    **{name: ("UserPromptSubmit hook additional context: UserPromptSubmit completed",
              "a callback cannot give plain output: the CLI's \"UserPromptSubmit completed\" arrives as additional "
              "context") for name in ("mcp_tool_plain_text", "mcp_tool_prompt_empty", "mcp_tool_two_blocks",
                                      # its text block beside structured content, read as the CLI reads it (round 9)
                                      "mcp_tool_structured",
                                      # a text block beside an image: the text, as the CLI reads it (round 11)
                                      "mcp_tool_image_block")},
    "mcp_tool_prompt_json_and_empty": ("context from the MCP judge\\nUserPromptSubmit completed",
                                       "a callback gives one answer: the hooks' contexts arrive joined, the CLI's "
                                       "\"UserPromptSubmit completed\" among them as additional context"),
}
