"""The agent's Task tools as a plan (sidecar/task_plan.py): the list as the CLI's results confirm it."""

from __future__ import annotations

from sidecar.task_plan import TaskPlan


def call(n: int, name: str, **tool_input: object) -> dict:
    return {"sessionUpdate": "tool_call", "toolUseId": f"t{n}", "name": name, "input": tool_input}


def result(n: int, output: str, status: str = "completed") -> dict:
    return {"sessionUpdate": "tool_call_update", "toolUseId": f"t{n}", "status": status, "output": output,
            "isError": status != "completed"}


def test_created_updated_and_deleted_tasks_make_the_whole_list_each_time() -> None:
    plan = TaskPlan()
    assert plan.follow(call(1, "TaskCreate", subject="Write the notes", description="d")) is None
    assert plan.follow(result(1, "Task #1 created successfully: Write the notes")) == {
        "sessionUpdate": "plan", "entries": [{"content": "Write the notes", "priority": "medium", "status": "pending"}]}
    plan.follow(call(2, "TaskCreate", subject="Check them", description="d"))
    plan.follow(result(2, "Task #2 created successfully: Check them"))
    plan.follow(call(3, "TaskUpdate", taskId="1", status="in_progress"))
    assert [e["status"] for e in plan.follow(result(3, "Updated task #1 status"))["entries"]] == ["in_progress",
                                                                                                     "pending"]
    plan.follow(call(4, "TaskUpdate", taskId="1", status="deleted"))
    assert plan.follow(result(4, "Updated task #1 deleted"))["entries"] == [
        {"content": "Check them", "priority": "medium", "status": "pending"}]


def test_what_the_cli_did_not_confirm_changes_nothing() -> None:
    plan = TaskPlan()
    plan.follow(call(1, "TaskCreate", subject="A", description="d"))
    assert plan.follow(result(1, "Error: no", status="failed")) is None  # refused (a TaskCreated hook's exit 2)
    plan.follow(call(2, "TaskUpdate", taskId="7", status="completed"))
    assert plan.follow(result(2, "Task not found")) is None  # a task that does not exist
    plan.follow(call(3, "TaskCreate", subject="B", description="d"))
    plan.follow(result(3, "Task #1 created successfully: B"))
    plan.follow(call(4, "TaskUpdate", taskId="1", status="pending"))
    assert plan.follow(result(4, "Updated task #1 status")) is None  # no change, no update
    assert plan.follow(result(99, "Task #5 created successfully: C")) is None  # a result for no Task call
    assert plan.follow({"sessionUpdate": "tool_call", "toolUseId": "t5", "name": "Bash", "input": {}}) is None
    assert plan.follow(call(6, "TaskCreate", subject="D")) is None
    assert plan.follow(result(6, '{"task": {"id": "2", "subject": "D"}}'))["entries"][-1]["content"] == "D"


def test_a_todo_list_is_a_plan_only_once_the_cli_took_it() -> None:
    """TodoWrite (where a model still has it): the list as written, after its result; a call the CLI refused (the
    bundled CLI refuses TodoWrite in SDK sessions) shows no plan the agent never made."""
    plan = TaskPlan()
    todos = [{"content": "Write", "status": "in_progress", "activeForm": "Writing"}, {"content": "Check", "status": "x"}]
    plan.follow(call(1, "TodoWrite", todos=todos))
    assert plan.follow(result(1, "<tool_use_error>No such tool available: TodoWrite</tool_use_error>",
                              status="failed")) is None
    plan.follow(call(2, "TodoWrite", todos=todos))
    assert plan.follow(result(2, "Todos have been modified successfully"))["entries"] == [
        {"content": "Write", "priority": "medium", "status": "in_progress"},
        {"content": "Check", "priority": "medium", "status": "pending"}]
