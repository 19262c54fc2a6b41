"""What a Bash command would do, judged by its effects (writes, deletes, secrets sent out, code run) rather than its spelling."""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field

from hooks.builtin.code_scan import scan_code
from hooks.builtin.guard_paths import GuardPaths, normalise, pattern_reason, secret_reason, under, SYSTEM_DIRS
from hooks.builtin.shell_parse import MAX_DEPTH, WRITE_REDIRECTS, Script, Simple, Word, parse

MAX_COMMANDS = 1000

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "busybox-sh"})
_INTERPRETER = re.compile(r"(?:python|pypy)[0-9.]*|perl[0-9.]*|ruby[0-9.]*|node|nodejs|deno|bun|php[0-9.]*|lua[0-9.]*|"
                          r"Rscript|osascript|tclsh|jshell|irb")
# Flags that take the program text as their argument, per interpreter family.
_CODE_FLAGS = {"python": ("-c",), "pypy": ("-c",), "perl": ("-e", "-E"), "ruby": ("-e",), "node": ("-e", "--eval", "-p", "--print"),
               "deno": ("eval",), "bun": ("-e", "--eval", "-p", "--print"), "php": ("-r",), "lua": ("-e",),
               "Rscript": ("-e",), "osascript": ("-e",), "tclsh": (), "jshell": (), "irb": ()}
DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "lwp-request", "GET"})
NETWORK = frozenset({"curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp", "ftp", "http",
                     "https", "xh", "openssl", "rclone", "aws", "gsutil", "s3cmd", "gh", "rsync", "sendmail", "mail",
                     "mutt", "lwp-request", "POST", "tftp", "smbclient", "aria2c"})
_WRAPPER_ARG_OPTS = {
    "sudo": frozenset("ughpCDrtUT"), "doas": frozenset("uC"), "nice": frozenset("n"), "ionice": frozenset("cnt"),
    "stdbuf": frozenset("ioe"), "timeout": frozenset("sk"), "setsid": frozenset(), "nohup": frozenset(),
    "time": frozenset("fo"), "command": frozenset(), "exec": frozenset("a"), "builtin": frozenset(),
    "unbuffer": frozenset(), "caffeinate": frozenset("tw"), "chronic": frozenset(), "taskset": frozenset(),
    "chrt": frozenset(), "strace": frozenset("oepsuIEb"), "ltrace": frozenset("oepsuE"), "torsocks": frozenset(),
    "proxychains": frozenset("f"), "proxychains4": frozenset("f"), "firejail": frozenset(), "catchsegv": frozenset(),
    "faketime": frozenset("f"), "script": frozenset(), "run0": frozenset("u"), "pkexec": frozenset(),
}
DISK_DEVICE = re.compile(r"/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d)")
FORK_BOMB = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]{0,30})\(\)\{\1\|\1&\};\1")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=(.*)", re.DOTALL)
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
# git configuration keys whose value is a program git runs, or that point hooks elsewhere.
_GIT_RUN_KEYS = re.compile(
    r"core\.(?:hookspath|fsmonitor|sshcommand|pager|editor|askpass|gitproxy)|credential\..*helper|include\.path|"
    r"includeif\..*|filter\..*\.(?:clean|smudge|process)|diff\..*\.(?:textconv|command)|merge\..*\.driver|"
    r"sequence\.editor|gpg\..*program|alias\..*|uploadpack\.packobjectshook|receive\.procreceiverefs|"
    r"protocol\.ext\.allow|init\.templatedir"
)


@dataclass(slots=True)
class Findings:
    """The worst thing found so far: deny beats ask; the first reason of the worst kind is the one shown."""

    level: str | None = None
    reason: str = ""

    def add(self, level: str, reason: str) -> None:
        if self.level == "deny" or (self.level == level):
            return
        self.level, self.reason = level, reason

    def deny(self, reason: str) -> None:
        self.add("deny", reason)

    def ask(self, reason: str) -> None:
        self.add("ask", reason)


@dataclass(slots=True)
class Scope:
    paths: GuardPaths
    cwd: str | None  # None once a `cd` went somewhere the guard cannot know
    depth: int = 0
    vars: dict[str, str] = field(default_factory=dict)

    def child(self) -> Scope:
        return Scope(self.paths, self.cwd, self.depth + 1, dict(self.vars))


@dataclass(slots=True)
class Stage:
    """What one pipeline stage did that the next stage cares about."""

    reads_secret: str | None = None  # why
    downloads: bool = False
    echo_text: str | None = None  # literal text an echo/printf writes to stdout
    echo_args: list[Word] | None = None


def analyse(command: str, paths: GuardPaths, cwd: str) -> Findings:
    """deny/ask (with the reason a user reads) for one Bash command, or a Findings with level None."""
    found = Findings()
    if "(" in command and FORK_BOMB.search("".join(command.split())):  # the regex backtracks on every word start
        found.deny("it is a fork bomb that would exhaust the machine's processes")
        return found
    script = parse(command)
    if len(script.commands) > MAX_COMMANDS:
        # Judging each costs ~10 µs: past this many the user reads it faster than a bounded guard would.
        found.ask(f"it holds too many commands to check ({len(script.commands)})")
        return found
    _script(script, Scope(paths, cwd), found)
    return found


def _script(script: Script, scope: Scope, found: Findings) -> None:
    if script.problems:
        found.ask(f"the guard cannot follow this command: {script.problems[0]}")
    prev: Stage | None = None
    for cmd in script.commands:
        piped = cmd.sep in ("|", "|&")
        stage = _simple(cmd, scope, found, prev if piped else None)
        if found.level == "deny":
            return
        prev = stage


# --------------------------------------------------------------------------- words


def _expand(word: Word, scope: Scope) -> str | None:
    """The word's value when the guard can know it (`~`, $HOME, $PWD and variables set earlier), else None."""
    text = word.text
    if not word.dynamic:
        return text
    if word.substs or "$(" in text or "`" in text:
        return None

    def repl(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name in scope.vars:
            return scope.vars[name]
        if name == "HOME":
            return scope.paths.home
        if name == "PWD" and scope.cwd:
            return scope.cwd
        raise KeyError(name)

    try:
        value = _VAR.sub(repl, text)
    except KeyError:
        return None
    return None if "$" in value else value


def _resolve(value: str, scope: Scope) -> str | None:
    if scope.cwd is None and not value.startswith(("/", "~")):
        return None
    if value.startswith("~") and value != "~" and not value.startswith("~/"):
        return None  # ~user: another user's home, which the guard does not look up
    return normalise(value, scope.cwd or "/", scope.paths.home)


def _operands(words: list[Word], arg_opts: frozenset[str] | tuple[str, ...] = ()) -> list[Word]:
    """Non-option words; an option in `arg_opts` swallows the next word; `--` ends options."""
    out: list[Word] = []
    skip = False
    ended = False
    for w in words:
        if skip:
            skip = False
            continue
        t = w.text
        if ended or not t.startswith("-") or t == "-":
            out.append(w)
        elif t == "--":
            ended = True
        elif t in arg_opts:
            skip = True
    return out


# --------------------------------------------------------------------------- effects on paths


def _write(word: Word, scope: Scope, found: Findings, verb: str = "writes to", content: str | None = None) -> None:
    value = _expand(word, scope)
    if value is None:
        found.ask(f"it {verb} a path only known when it runs ({word.text})")
        return
    if word.glob and not word.quoted:
        full = _resolve(value, scope) or value
        why = pattern_reason(full, scope.paths.home)
        if why:
            found.deny(f"it {verb} {value}: {why}")
            return
    full = _resolve(value, scope)
    if full is None:
        # After a `cd` we cannot follow: names alone still tell secrets apart.
        why = secret_reason("/" + value.lstrip("/"), scope.paths.home, content)
        if why:
            found.deny(f"it {verb} {value}: {why}")
        return
    verdict = scope.paths.write_verdict(full, content)
    if verdict:
        found.add(verdict[0], f"it {verb} {value}: {verdict[1]}")


def _dangerous_tree(full: str, scope: Scope) -> str | None:
    paths = scope.paths
    if full == "/" or full == paths.home:
        return "the whole system or the home directory"
    if full.count("/") == 1:
        return "a top-level directory"
    if any(under(full, d) for d in SYSTEM_DIRS):
        return "a system directory"
    if paths.project and under(paths.project, full):
        return "the project itself (or a folder that holds it)"
    if posixpath.basename(full) == ".git":
        return "the repository's history (.git)"
    return None


def _delete(word: Word, scope: Scope, found: Findings, recursive: bool) -> None:
    value = _expand(word, scope)
    if value is None:
        if recursive:
            found.ask(f"it recursively deletes a path only known when it runs ({word.text})")
        return
    stripped = value
    whole = True  # does the delete take the whole tree at `stripped`?
    if word.glob and not word.quoted:
        last = value.rstrip("/").rsplit("/", 1)[-1]
        stripped = re.sub(r"/?[^/]*[*?\[{][^/]*$", "", value) or ("/" if value.startswith("/") else ".")
        # `dir/*` empties dir; `/tmp/build-*` only takes some of /tmp's entries.
        whole = last in ("*", ".*", "*.*", "{*,.*}", ".[!.]*")
    full = _resolve(stripped, scope)
    if full is None:
        if recursive:
            found.ask(f"it recursively deletes {value}, in a place only known when it runs")
        _write(word, scope, found, "deletes")
        return
    if recursive and whole:
        why = _dangerous_tree(full, scope)
        if why:
            found.deny(f"it deletes {value}, which is {why}")
            return
    _write(word, scope, found, "deletes")


def _read(word: Word, scope: Scope) -> str | None:
    value = _expand(word, scope)
    if value is None or value.startswith("-"):
        return None
    full = _resolve(value, scope)
    if full is None:
        why = secret_reason("/" + value.lstrip("/"), scope.paths.home)
    else:
        why = scope.paths.read_reason(full)
    return f"{value}: {why}" if why else None


# --------------------------------------------------------------------------- one simple command


def _simple(cmd: Simple, scope: Scope, found: Findings, upstream: Stage | None) -> Stage:
    stage = Stage()
    sub_secret: str | None = None
    sub_download = False
    for sub in cmd.substs:
        if scope.depth + 1 > MAX_DEPTH:
            found.ask("it nests commands too deeply to check")
            break
        inner = scope.child()
        _script(sub, inner, found)
        for c in sub.commands:
            prog = _prog(c.words)
            if prog in DOWNLOADERS:
                sub_download = True
            if sub_secret is None:
                for w in c.words[1:]:
                    sub_secret = sub_secret or _read(w, scope)
                for r in c.redirects:
                    if r.op.endswith("<"):
                        sub_secret = sub_secret or _read(r.target, scope)
    stdin_secret: str | None = upstream.reads_secret if upstream else None
    stage.reads_secret = stdin_secret
    stdin_body: str | None = None
    written: list[Word] = []
    for r in cmd.redirects:
        op = r.op.lstrip("0123456789")
        if op in WRITE_REDIRECTS:
            if op == ">&" and (r.target.text.isdigit() or r.target.text == "-"):
                continue
            if DISK_DEVICE.match(r.target.text):
                found.deny(f"it writes raw data onto the disk device {r.target.text}")
                continue
            _write(r.target, scope, found)
            written.append(r.target)
        elif op == "<":
            stdin_secret = stdin_secret or _read(r.target, scope)
            stage.reads_secret = stage.reads_secret or stdin_secret
        elif op in ("<<", "<<-", "<<<"):
            stdin_body = r.body
    words = list(cmd.words)
    # Leading assignments: remembered when they are the whole command, so `F=.env; echo x > $F` is followed.
    i = 0
    # (A quoted value still makes an assignment: `X="a b"`; a quoted name would not, which errs towards analysing more.)
    while i < len(words) and _ASSIGNMENT.fullmatch(words[i].text):
        i += 1
    if i and i == len(words):
        for w in words:
            m = _ASSIGNMENT.fullmatch(w.text)
            assert m is not None
            value = _expand(Word(m.group(2), w.dynamic), scope)
            if value is None:
                scope.vars.pop(m.group(1), None)
                scope.vars[m.group(1)] = "$" + m.group(1)  # unknown: keeps later uses dynamic
            else:
                scope.vars[m.group(1)] = value
        return stage
    words = words[i:]
    if words and words[0].dynamic:
        # `a=r; b=m; $a$b -rf /` and `X="rm -rf /"; $X`: run what the variables hold, split as the shell splits.
        value = _expand(words[0], scope)
        if value is not None:
            words = ([Word(value)] if words[0].quoted else [Word(t) for t in value.split()]) + words[1:]
    words = _unwrap(words, scope, found)
    if not words:
        return stage
    prog = posixpath.basename(words[0].text)
    args = words[1:]
    if words[0].dynamic and _expand(words[0], scope) is None:
        found.ask(f"the program it runs ({words[0].text}) is only known when it runs")
        return stage
    if any(w.text == "--no-preserve-root" for w in args):
        found.deny("it disables the safeguard against deleting the root directory (--no-preserve-root)")
    runs_code = prog in SHELLS or bool(_INTERPRETER.fullmatch(prog)) or prog in ("source", ".", "eval")
    if runs_code and sub_download:
        found.deny("it runs a script downloaded from the network without letting anyone read it first")
    if prog in NETWORK and (sub_secret or stdin_secret):
        found.deny(f"it sends a secret file over the network ({sub_secret or stdin_secret})")
    handler = _HANDLERS.get(prog)
    if handler is not None:
        handler(prog, args, scope, found, stage, upstream, stdin_body)
    elif prog in SHELLS:
        _shell(args, scope, found, upstream, stdin_body)
    elif _INTERPRETER.fullmatch(prog):
        _interpreter(prog, args, scope, found, upstream, stdin_body)
    elif prog.startswith("mkfs") or prog in ("fdisk", "sfdisk", "parted", "wipefs", "sgdisk"):
        if any(DISK_DEVICE.match(w.text) for w in args):
            found.deny("it reformats or repartitions a disk")
    if prog in DOWNLOADERS:
        stage.downloads = True
    if prog in NETWORK:
        _network(prog, args, scope, found)
    if stage.reads_secret is None and prog not in _NOT_READERS:
        for w in args:
            why = _read(w, scope)
            if why:
                stage.reads_secret = why
                break
    if stage.reads_secret and (written or prog == "tee"):
        targets = written or _operands(args)
        if any(not (t.text.startswith(("/dev/null", "/dev/std")) or t.text.isdigit()) for t in targets):
            found.ask(f"it copies secret data ({stage.reads_secret}) into a file where it is no longer protected")
    return stage


# Programs whose operands are not files they read (or whose reading is judged elsewhere).
_NOT_READERS = frozenset({"echo", "printf", "cd", "pushd", "rm", "rmdir", "unlink", "touch", "mkdir", "chmod", "chown",
                          "chgrp", "cp", "mv", "ln", "install", "ls", "stat", "test", "[", "[[", "git", "file", "du",
                          "wc", "realpath", "readlink", "basename", "dirname"})


def _prog(words: list[Word]) -> str:
    for w in words:
        if not _ASSIGNMENT.fullmatch(w.text):
            return posixpath.basename(w.text)
    return ""


def _unwrap(words: list[Word], scope: Scope, found: Findings) -> list[Word]:
    """The words of the program really run: `sudo -u x env A=1 timeout 5 nice rm …` → `rm …`."""
    for _ in range(16):
        if not words:
            return words
        prog = posixpath.basename(words[0].text)
        if prog in _WRAPPER_ARG_OPTS:
            takes = _WRAPPER_ARG_OPTS[prog]
            j = 1
            while j < len(words) and words[j].text.startswith("-") and words[j].text != "-":
                t = words[j].text
                if t == "--":
                    j += 1
                    break
                if prog == "command" and t in ("-v", "-V"):
                    return []  # `command -v x` only looks x up
                j += 2 if (len(t) == 2 and t[1] in takes) else 1
            if prog in ("timeout",) and j < len(words):
                j += 1  # the duration
            if prog in ("nice",) and j < len(words) and words[j].text.lstrip("-").isdigit():
                j += 1
            if prog in ("taskset", "chrt") and j < len(words):
                j += 1  # the mask / priority
            words = words[j:]
        elif prog == "env":
            j = 1
            while j < len(words):
                t = words[j].text
                if t in ("-u", "--unset"):
                    j += 2
                elif t in ("-C", "--chdir") and j + 1 < len(words):
                    value = _expand(words[j + 1], scope)
                    scope.cwd = _resolve(value, scope) if value is not None else None
                    j += 2
                elif t in ("-S", "--split-string") and j + 1 < len(words):
                    split = parse(" ".join([words[j + 1].text] + [w.text for w in words[j + 2:]]), MAX_DEPTH)
                    return split.commands[0].words if split.commands else []
                elif t.startswith("-") or _ASSIGNMENT.fullmatch(t):
                    j += 1
                else:
                    break
            words = words[j:]
        elif prog == "xargs":
            j = 1
            arg_opts = ("-I", "-n", "-P", "-L", "-d", "-a", "-E", "-s", "--max-args", "--max-procs", "--delimiter",
                        "--arg-file", "--replace")
            while j < len(words) and words[j].text.startswith("-"):
                j += 2 if words[j].text in arg_opts else 1
            words = words[j:]
        elif prog == "busybox" and len(words) > 1:
            words = words[1:]
        elif prog in ("flock",):
            ops = _operands(words[1:], ("-w", "--timeout", "-E", "--conflict-exit-code"))
            for k, w in enumerate(ops):
                if w.text in ("-c", "--command") and k + 1 < len(ops):
                    _nested(ops[k + 1], scope, found)
                    return []
            words = ops[1:]
        elif prog == "watch":
            ops = _operands(words[1:], ("-n", "--interval", "-d"))
            if ops:
                _nested(Word(" ".join(w.text for w in ops), any(w.dynamic for w in ops)), scope, found)
            return []
        else:
            return words
    return words


def _nested(code: Word, scope: Scope, found: Findings, what: str = "a command") -> None:
    """A command given as one string (`sh -c`, `eval`, `watch`, `find -exec sh -c`): parse it in turn."""
    if code.dynamic and _expand(code, scope) is None:
        found.ask(f"it runs {what} only known when it runs ({code.text[:80]})")
        return
    if scope.depth + 1 > MAX_DEPTH:
        found.ask("it nests commands too deeply to check")
        return
    _script(parse(_expand(code, scope) or code.text, scope.depth + 1), scope.child(), found)


# --------------------------------------------------------------------------- programs


def _cd(prog, args, scope, found, stage, upstream, stdin_body) -> None:
    ops = _operands(args)
    if not ops:
        scope.cwd = scope.paths.home if prog == "cd" else None
        return
    value = _expand(ops[0], scope)
    scope.cwd = _resolve(value, scope) if value is not None and value != "-" else None


def _rm(prog, args, scope, found, stage, upstream, stdin_body) -> None:
    short = "".join(a.text[1:] for a in args if a.text.startswith("-") and not a.text.startswith("--"))
    recursive = prog in ("rmdir",) or "r" in short.lower() or any(a.text == "--recursive" for a in args)
    for w in _operands(args):
        _delete(w, scope, found, recursive)
    if upstream and upstream.echo_args and prog in ("rm", "shred"):
        for w in upstream.echo_args:
            _delete(w, scope, found, recursive)


def _copy(prog, args, scope, found, stage, upstream, stdin_body) -> None:
    ops = _operands(args, _COPY_ARG_OPTS.get(prog, _COPY_ARG_OPTS["cp"]))
    target = None
    for k, a in enumerate(args):
        if a.text in ("-t", "--target-directory") and k + 1 < len(args):
            target = args[k + 1]
        elif a.text.startswith("--target-directory="):
            target = Word(a.text.split("=", 1)[1], a.dynamic)
    if target is None:
        if len(ops) < 2:
            return
        target, sources = ops[-1], ops[:-1]
    else:
        sources = ops
    remote = prog in ("scp", "rsync", "sftp") and _is_remote(target.text)
    if prog == "rsync" and not remote and any(a.text.startswith("--del") for a in args):
        _delete(target, scope, found, recursive=True)  # --delete empties what the source lacks
    for src in sources:
        if prog == "mv":
            _write(src, scope, found, "moves away")
        why = _read(src, scope)
        if why and remote:
            found.deny(f"it sends a secret file to another machine ({why})")
        elif why and prog in ("cp", "rsync", "install", "scp", "ln", "mv", "ditto"):
            if prog != "mv":
                found.ask(f"it copies a secret file ({why}) where it is no longer protected")
    if not remote:
        if len(sources) == 1:
            value = _expand(target, scope)
            src_name = posixpath.basename((_expand(sources[0], scope) or "").rstrip("/"))
            full = _resolve(value, scope) if value is not None else None
            if full and src_name and os.path.isdir(full):
                target = Word(posixpath.join(value or "", src_name))
        _write(target, scope, found)


# Options that take the next word as their value, per copying program.
_COPY_ARG_OPTS = {
    "cp": ("-t", "--target-directory", "-S", "--suffix"),
    "mv": ("-t", "--target-directory", "-S", "--suffix"),
    "ln": ("-t", "--target-directory", "-S", "--suffix"),
    "install": ("-t", "--target-directory", "-S", "--suffix", "-m", "--mode", "-o", "--owner", "-g", "--group"),
    "scp": ("-i", "-P", "-l", "-F", "-o", "-c", "-J", "-S"),
    "rsync": ("-e", "--rsh", "-f", "--filter", "--exclude", "--include", "--files-from", "--exclude-from", "-T"),
}


def _is_remote(text: str) -> bool:
    head = text.split("/", 1)[0]
    return ":" in head and not text.startswith(("/", ".", "~"))


def _in_place(prog, args, scope, found, stage, upstream, stdin_body) -> None:
    """sed -i, awk -i inplace: the operands after the program text are written."""
    texts = [a.text for a in args]
    if prog == "sed":
        if not any(t.startswith("--in-place") or (t.startswith("-") and not t.startswith("--") and "i" in t)
                   for t in texts):
            return
        has_script_flag = any(t in ("-e", "-f", "--expression", "--file") or t.startswith(("--expression=", "--file="))
                              for t in texts)
        ops = _operands(args, ("-e", "-f", "--expression", "--file", "-l", "--line-length"))
        files = ops if has_script_flag else ops[1:]
    else:
        ops = _operands(args, ("-i", "-f", "-v", "--include", "--file", "--assign", "-F"))
        if ops and "-f" not in texts:
            _judge_code(prog, ops[0].text, scope, found)  # awk's system(), like any one-liner's
        if "inplace" not in texts:
            return
        files = ops[1:] if "-f" not in texts else ops
    for w in files:
        _write(w, scope, found)


def _writes_operands(prog, args, scope, found, stage, upstream, stdin_body) -> None:
    arg_opts = {"truncate": ("-s", "--size", "-r", "--reference"), "touch": ("-d", "-t", "-r", "--date", "--reference"),
                "tee": (), "sponge": (), "mkdir": ("-m", "--mode"), "chattr": (), "shred": ("-n", "-s", "--iterations")}
    for w in _operands(args, arg_opts.get(prog, ())):
        if prog == "shred":
            _delete(w, scope, found, False)
        else:
            _write(w, scope, found)


def _meta(prog, args, scope, found, stage, upstream, stdin_body) -> None:
    """chmod/chown: harmless on a secret (chmod 600 is good practice), not on Orion's files or a whole tree."""
    recursive = any(a.text in ("-R", "--recursive") or (a.text.startswith("-") and "R" in a.text and
                                                      not a.text.startswith("--")) for a in args)
    ops = _operands(args, ("--reference",))
    for w in ops[1:]:
        value = _expand(w, scope)
        full = _resolve(value, scope) if value is not None else None
        if full is None:
            continue
        if recursive and _dangerous_tree(full, scope) and not under(full, scope.paths.project or "\0"):
            found.deny(f"it recursively changes ownership or permissions of {value}")
        verdict = scope.paths.orion_reason(full)
        if verdict:
            found.deny(f"it changes {value}: {verdict}")
        elif scope.paths.machinery_reason(full):
            found.ask(f"it changes {value}: {scope.paths.machinery_reason(full)}")
        elif ".git" in full.split("/")[:-1] and "hooks" in full.split("/"):
            found.deny(f"it changes {value}: files inside .git/hooks run on every git command")


def _dd(prog, args, scope, found, stage, upstream, stdin_body) -> None:
    for a in args:
        if a.text.startswith("of="):
            if DISK_DEVICE.match(a.text[3:]):
                found.deny(f"it writes raw data onto the disk device {a.text[3:]}")
            else:
                _write(Word(a.text[3:], a.dynamic), scope, found)
        elif a.text.startswith("if="):
            stage.reads_secret = _read(Word(a.text[3:], a.dynamic), scope)


def _shutdown(prog, args, scope, found, stage, upstream, stdin_body) -> None:
    found.deny("it shuts down or restarts the machine")


def _echo(prog, args, scope, found, stage, upstream, stdin_body) -> None:
    ops = [a for a in args if not (prog == "echo" and a.text in ("-n", "-e", "-E"))]
    stage.echo_args = ops
    if not any(a.dynamic for a in ops):
        stage.echo_text = " ".join(a.text for a in ops)
        if prog == "printf" and ops:
            stage.echo_text = ops[0].text.replace("\\n", "\n") + " " + " ".join(a.text for a in ops[1:])


def _eval(prog, args, scope, found, stage, upstream, stdin_body) -> None:
    if args:
        _nested(Word(" ".join(a.text for a in args), any(a.dynamic and _expand(a, scope) is None for a in args),
                     substs=[s for a in args for s in a.substs]), scope, found, "a command built")


def _shell(args: list[Word], scope: Scope, found: Findings, upstream: Stage | None, stdin_body: str | None) -> None:
    for k, a in enumerate(args):
        t = a.text
        if t.startswith("-") and not t.startswith("--") and "c" in t[1:]:
            if k + 1 < len(args):
                _nested(args[k + 1], scope, found)
            return
        if t.startswith("-") or t.startswith("+"):
            continue
        return  # a script file: the project's own code, the user's permission rules cover it
    _code_from_stdin(None, scope, found, upstream, stdin_body)


def _interpreter(prog: str, args: list[Word], scope: Scope, found: Findings, upstream: Stage | None,
                 stdin_body: str | None) -> None:
    family = re.match(r"[A-Za-z]+", prog)
    flags = _CODE_FLAGS.get(family.group(0) if family else prog, ("-c", "-e"))
    in_place = prog.startswith(("perl", "ruby")) and any(
        a.text.startswith("-") and not a.text.startswith("--") and "i" in a.text[1:].split("e")[0] for a in args)
    code: Word | None = None
    operands: list[Word] = []
    k = 0
    while k < len(args):
        t = args[k].text
        if code is None and t in flags and k + 1 < len(args):
            code = args[k + 1]
            k += 2
            continue
        if code is None and t.startswith("-") and len(t) > 2 and t[-1] in "eEcr" and "-" + t[-1] in flags:
            code = args[k + 1] if k + 1 < len(args) else None  # bundled flags: perl -pie, python -Sc
            k += 2
            continue
        if t in ("-m", "-M") or (t.startswith("-") and t not in ("-",)):
            if t == "-m":
                return  # `python -m module`: runs an installed module
            k += 1
            continue
        operands.append(args[k])
        k += 1
    if code is not None:
        if code.dynamic and _expand(code, scope) is None:
            found.ask(f"it runs {prog} code only known when it runs")
        else:
            _judge_code(prog, code.text, scope, found)
        if in_place:
            for w in operands:
                _write(w, scope, found)
        return
    if operands and operands[0].text != "-":
        return  # a script file
    _code_from_stdin(prog, scope, found, upstream, stdin_body)


def _code_from_stdin(interpreter: str | None, scope: Scope, found: Findings, upstream: Stage | None,
                     stdin_body: str | None) -> None:
    text = stdin_body
    if upstream is not None:
        if upstream.downloads:
            found.deny("it pipes a download straight into a shell or interpreter, running code nobody has read")
            return
        text = upstream.echo_text
        if text is None:
            found.ask("it runs code it reads from a pipe, which the guard cannot read")
            return
    if text is None:
        return  # an interactive shell, or a file redirected in
    if interpreter is None:
        if scope.depth + 1 > MAX_DEPTH:
            found.ask("it nests commands too deeply to check")
            return
        _script(parse(text, scope.depth + 1), scope.child(), found)
    else:
        _judge_code(interpreter, text, scope, found)


def _judge_code(prog: str, code: str, scope: Scope, found: Findings) -> None:
    verdict = scan_code(code, lambda p: _code_path_verdict(p, scope), lambda c: _code_shell_verdict(c, scope))
    if verdict:
        found.add(verdict[0], f"its {prog} code {verdict[1]}")


def _code_path_verdict(value: str, scope: Scope) -> tuple[str, str] | None:
    full = _resolve(value, scope) or normalise(value, "/", scope.paths.home)
    return scope.paths.write_verdict(full)


def _code_shell_verdict(command: str, scope: Scope) -> tuple[str, str] | None:
    inner = Findings()
    if scope.depth + 1 <= MAX_DEPTH:
        _script(parse(command, scope.depth + 1), scope.child(), inner)
    return (inner.level, inner.reason) if inner.level else None


def _find(prog, args, scope, found, stage, upstream, stdin_body) -> None:
    roots: list[Word] = []
    k = 0
    while k < len(args) and args[k].text in ("-H", "-L", "-P", "-O0", "-O1", "-O2", "-O3"):
        k += 1
    while k < len(args) and not args[k].text.startswith(("-", "(", "!")):
        roots.append(args[k])
        k += 1
    roots = roots or [Word(".")]
    expr = args[k:]
    names = [expr[j + 1].text for j, a in enumerate(expr[:-1]) if a.text in ("-name", "-iname", "-path", "-wholename")]
    deletes = any(a.text == "-delete" for a in expr)
    for j, a in enumerate(expr):
        if a.text in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((m for m in range(j + 1, len(expr)) if expr[m].text in (";", "+")), len(expr))
            inner = expr[j + 1:end]
            if inner and posixpath.basename(inner[0].text) in ("rm", "shred", "unlink"):
                deletes = True
            elif inner:
                sub = Simple(words=[w if w.text != "{}" else roots[0] for w in inner])
                _simple(sub, scope.child(), found, None)
    if not deletes:
        return
    for root in roots:
        value = _expand(root, scope)
        full = _resolve(value, scope) if value is not None else None
        if full is None:
            found.ask(f"it deletes files under a directory only known when it runs ({root.text})")
            continue
        tree = _dangerous_tree(full, scope)
        if tree and not (names and under(full, scope.paths.project or "\0")):
            found.deny(f"it deletes files under {value}, which is {tree}")
        _write(root, scope, found, "deletes")
    for pattern in names:
        why = pattern_reason("/" + pattern.rsplit("/", 1)[-1], scope.paths.home) or secret_reason(
            "/" + pattern.rsplit("/", 1)[-1], scope.paths.home)
        if why:
            found.deny(f"it deletes files named {pattern}: {why}")


def _git(prog, args, scope, found, stage, upstream, stdin_body) -> None:
    k = 0
    while k < len(args) and args[k].text.startswith("-"):
        t = args[k].text
        if t == "-c" and k + 1 < len(args):
            key = args[k + 1].text.split("=", 1)[0].lower()
            if _GIT_RUN_KEYS.fullmatch(key):
                found.ask(f"it runs git with {key} set, which makes git run another program")
            k += 2
        elif t in ("-C", "--git-dir", "--work-tree", "--namespace", "--exec-path") and k + 1 < len(args):
            if t == "--exec-path":
                found.ask("it points git at other programs (--exec-path)")
            k += 2
        else:
            k += 1
    if k >= len(args):
        return
    sub, rest = args[k].text, args[k + 1:]
    if sub == "clean":
        flags = "".join(a.text[1:] for a in rest if a.text.startswith("-") and not a.text.startswith("--"))
        forced = "f" in flags or any(a.text == "--force" for a in rest)
        if forced and ("x" in flags or "X" in flags):
            found.ask("git clean -x also deletes ignored files such as .env and local secrets, beyond recovery")
    elif sub == "config":
        ops = _operands(rest, ("-f", "--file", "--blob", "--type", "--default", "--comment"))
        reading = any(a.text in ("--get", "--get-all", "--get-regexp", "-l", "--list", "--unset", "--unset-all",
                                 "--show-origin", "--name-only", "get", "list") for a in rest)
        if ops and ops[0].text in ("set",):
            ops = ops[1:]
        if len(ops) >= 2 and not reading and _GIT_RUN_KEYS.fullmatch(ops[0].text.lower()):
            found.deny(f"it sets git's {ops[0].text}, which makes git run another program on later commands")
    elif sub == "submodule" and rest and rest[0].text == "foreach":
        cmd = [a for a in rest[1:] if not a.text.startswith("--")]
        if cmd:
            _nested(Word(" ".join(a.text for a in cmd), any(a.dynamic for a in cmd)), scope, found)


def _network(prog: str, args: list[Word], scope: Scope, found: Findings) -> None:
    """Uploads of protected files: curl -d @.env, -F f=@key, -T file, wget --post-file, scp/rsync handled by _copy."""
    for k, a in enumerate(args):
        t = a.text
        candidates: list[str] = []
        if t.startswith("@"):
            candidates.append(t[1:])
        if "=@" in t or "=<" in t:
            candidates.append(re.split(r"=[@<]", t, maxsplit=1)[1].split(";", 1)[0])
        if k and args[k - 1].text == "--data-urlencode" and "@" in t:
            candidates.append(t.split("@", 1)[1])
        if t.startswith(("-d@", "-F@")):
            candidates.append(t[3:])
        if t.startswith(("--post-file=", "--body-file=", "--upload-file=")):
            candidates.append(t.split("=", 1)[1])
        if t in ("-T", "--upload-file", "--post-file", "--body-file", "--data-binary", "-d", "--data", "-F",
                 "--form", "--json") and k + 1 < len(args):
            nxt = args[k + 1].text
            if t in ("-T", "--upload-file", "--post-file", "--body-file"):
                candidates.append(nxt)
        if prog in ("nc", "ncat", "netcat", "socat", "gh", "aws", "gsutil", "rclone", "s3cmd", "mail", "sendmail"):
            candidates.append(t)
        for c in candidates:
            why = _read(Word(c, a.dynamic), scope) if c not in ("-", "") else None
            if why:
                found.deny(f"it sends a secret file over the network ({why})")
                return


def _crontab(prog, args, scope, found, stage, upstream, stdin_body) -> None:
    if not any(a.text in ("-l", "-r") for a in args):
        found.ask("it installs scheduled jobs that run later, outside this session")


_HANDLERS = {
    "cd": _cd, "pushd": _cd, "popd": _cd,
    "rm": _rm, "rmdir": _rm, "unlink": _rm, "srm": _rm,
    "cp": _copy, "mv": _copy, "ln": _copy, "install": _copy, "rsync": _copy, "scp": _copy, "ditto": _copy,
    "sed": _in_place, "gsed": _in_place, "awk": _in_place, "gawk": _in_place,
    "tee": _writes_operands, "sponge": _writes_operands, "truncate": _writes_operands, "touch": _writes_operands,
    "mkdir": _writes_operands, "shred": _writes_operands,
    "chmod": _meta, "chown": _meta, "chgrp": _meta, "chattr": _meta, "setfacl": _meta,
    "dd": _dd, "shutdown": _shutdown, "reboot": _shutdown, "halt": _shutdown, "poweroff": _shutdown,
    "echo": _echo, "printf": _echo, "eval": _eval, "find": _find, "git": _git, "crontab": _crontab,
}
