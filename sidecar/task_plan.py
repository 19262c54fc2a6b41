"""The agent's task list as a plan: what the CLI's Task tools (TaskCreate, TaskUpdate) build, as `plan` updates.

In an SDK session the bundled CLI keeps the agent's to-do list with its Task tools (TodoWrite, the older form, where
a model still has it). A client shows a plan (ACP's `plan` update: every entry, each time) only if someone turns those
calls into one. `TaskPlan` follows a session's core updates (live, or replayed from the CLI's transcript) and,
when a Task call succeeded, answers the whole list as it now stands. Only confirmed changes count: a call that
failed, or whose result names no task, changes nothing (the agent may have asked for a task that does not exist).
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from typing import Any

TASK_TOOLS = frozenset({"TaskCreate", "TaskUpdate", "TodoWrite"})
STATUSES = ("pending", "in_progress", "completed")
MAX_PENDING_CALLS = 256  # Task calls awaiting their result (the CLI answers each; this only bounds a broken stream)
MAX_TASKS = 1000  # entries kept per session (a plan longer than this is no plan a person reads)
_CREATED = re.compile(r"Task #(\S+?) created")
_UPDATED = re.compile(r"Updated task #(\S+?)\b")


class TaskPlan:
    """One session's task list, built from its Task tool calls and their results."""

    def __init__(self) -> None:
        self._calls: OrderedDict[str, tuple[str, dict[str, Any]]] = OrderedDict()
        self._tasks: OrderedDict[str, dict[str, str]] = OrderedDict()

    def follow(self, update: dict[str, Any]) -> dict[str, Any] | None:
        """Take one core update; a `plan` update when it confirmed a change to the list, else None."""
        kind = update.get("sessionUpdate")
        if kind == "tool_call" and update.get("name") in TASK_TOOLS:
            given = update.get("input")
            tool_input: dict[str, Any] = given if isinstance(given, dict) else {}
            self._calls[str(update.get("toolUseId"))] = (str(update["name"]), tool_input)
            while len(self._calls) > MAX_PENDING_CALLS:
                self._calls.popitem(last=False)
            return None
        if kind != "tool_call_update":
            return None
        call = self._calls.pop(str(update.get("toolUseId")), None)
        if call is None or update.get("status") != "completed" or update.get("isError"):
            return None
        name, tool_input = call
        output = update.get("output")
        if name == "TodoWrite":
            changed = self._written(tool_input)
        elif name == "TaskCreate":
            changed = self._created(tool_input, output)
        else:
            changed = self._updated(tool_input, output)
        return {"sessionUpdate": "plan", "entries": self.entries()} if changed else None

    def entries(self) -> list[dict[str, str]]:
        """ACP plan entries, in the order the tasks were created."""
        return [{"content": task["subject"], "priority": task.get("priority", "medium"), "status": task["status"]}
                for task in self._tasks.values()]

    def _written(self, tool_input: dict[str, Any]) -> bool:
        """TodoWrite: the whole list, as written."""
        todos = tool_input.get("todos")
        if not isinstance(todos, list):
            return False
        tasks: OrderedDict[str, dict[str, str]] = OrderedDict()
        for n, todo in enumerate(todos[:MAX_TASKS]):
            if isinstance(todo, dict) and isinstance(todo.get("content"), str) and todo["content"].strip():
                tasks[str(n)] = {"subject": todo["content"].strip(),
                                 "status": todo["status"] if todo.get("status") in STATUSES else "pending",
                                 "priority": todo["priority"] if todo.get("priority") in ("high", "low") else "medium"}
        changed = list(tasks.values()) != list(self._tasks.values())
        self._tasks = tasks
        return changed

    def _created(self, tool_input: dict[str, Any], output: Any) -> bool:
        task_id = _task_id(output, _CREATED)
        subject = tool_input.get("subject")
        if task_id is None or not isinstance(subject, str) or not subject.strip():
            return False
        self._tasks[task_id] = {"subject": subject.strip(), "status": "pending"}
        while len(self._tasks) > MAX_TASKS:
            self._tasks.popitem(last=False)
        return True

    def _updated(self, tool_input: dict[str, Any], output: Any) -> bool:
        task_id = str(tool_input.get("taskId") or "")
        confirmed = _task_id(output, _UPDATED)
        task = self._tasks.get(task_id)
        if task is None or (confirmed is not None and confirmed != task_id):
            return False
        status = tool_input.get("status")
        if status == "deleted":
            del self._tasks[task_id]
            return True
        before = dict(task)
        if status in STATUSES:
            task["status"] = status
        if isinstance(tool_input.get("subject"), str) and tool_input["subject"].strip():
            task["subject"] = tool_input["subject"].strip()
        return task != before


def _task_id(output: Any, pattern: re.Pattern[str]) -> str | None:
    """The task id a Task tool's result names: its text ("Task #3 created successfully: …") or, from a CLI that
    answers JSON, its `task.id` / `taskId` / `id`."""
    text = output if isinstance(output, str) else json.dumps(output) if output is not None else ""
    found = pattern.search(text)
    if found:
        return found.group(1).rstrip(":.,")
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, dict):
        inner = data.get("task")
        task: dict[str, Any] = inner if isinstance(inner, dict) else data
        for key in ("id", "taskId"):
            if isinstance(task.get(key), (str, int)):
                return str(task[key])
    return None
