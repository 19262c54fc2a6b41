/* Loaded into the Claude Code CLI inside a session's boundary (LD_PRELOAD, set by box_init.sh for the CLI alone),
 * before the CLI's own code runs: it makes the CLI process non-dumpable. The kernel then refuses every other
 * process of the box, same user or not, what it would otherwise grant a process of the same user: ptrace, and
 * through it /proc/<cli>/fd/* (the CLI's stdin and stdout, the sidecar's control channel), /proc/<cli>/environ,
 * /proc/<cli>/mem. Processes inside the box have no capabilities, so nothing inside can override it.
 * sidecar/cli_shield.py builds it; docs/SECURITY.md "Sandbox" says what it closes.
 *
 * LD_PRELOAD is removed from the CLI's environment at once, so the agent's commands start as plain, dumpable
 * processes (execve resets the flag anyway). The one exception is `env`: a CLI started as `#!/usr/bin/env node`
 * reaches its real program through env, which must pass the library on. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

__attribute__((constructor)) static void orion_cli_shield(void) {
    int saved = errno;
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (strcmp(program_invocation_short_name, "env") != 0)
        unsetenv("LD_PRELOAD");
    errno = saved;
}
