"""Orion's built-in hooks in one real session: protection, document-guard, project detection, and memory that keeps no private text."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import copy_project, request_text, result_text, tool_results

pytestmark = [pytest.mark.cli, pytest.mark.asyncio]

PRIVATE_WORDS = ["cobaltfox", "secret words"]
PROMPT = "Let us work on Zephyrblade today. <private>secret words cobaltfox</private>"


async def test_builtin_guards_project_detection_and_private_memory(sidecar, tmp_path) -> None:
    vault = copy_project("vault", tmp_path)
    async with sidecar(project="notes", trust=False) as run:
        sid = (await run.new_session("builtin", vaultDir=str(vault), allowedTools=["Bash"]))["sessionId"]
        result = await run.prompt(sid, PROMPT)
        assert result["stopReason"] == "end_turn"

        # protection: the .env write never happened and the model was told why.
        assert not (run.project / ".env").exists()
        requests = run.model_requests("builtin")
        assert len(requests) == 4
        [denied] = tool_results(requests[1])
        assert denied.get("is_error") is True
        assert "Blocked by Orion's protection hook" in result_text(denied)
        [protection] = [r for r in run.named("hook_response", sid)
                        if r["hookName"] == "protection" and r["outcome"] == "blocked"]
        assert protection["output"]["hookSpecificOutput"]["permissionDecision"] == "deny"

        # document-guard: the poisoned file was read, with a warning the model sees next to it.
        [guard] = [r for r in run.named("hook_response", sid) if r["hookName"] == "document-guard"]
        assert "<document-guard>" in guard["output"]["hookSpecificOutput"]["additionalContext"]
        assert "<document-guard>" not in request_text(requests[1])
        assert "<document-guard>" in request_text(requests[2])

        # project detection: the frontend heard which vault project the prompt is about.
        [change] = run.named("projectContextChange", sid)
        assert change["project"]["name"] == "Zephyrblade"
        assert change["project"]["path"] == str(vault.resolve() / "Projects" / "Zephyrblade")

        await run.end(sid)

        prompts = (await run.request("memory/search", {"query": "Zephyrblade"}))["results"]
        assert {(h["kind"], h["sessionId"]) for h in prompts} >= {("prompt", sid)}
        observations = (await run.request("memory/search", {"query": "glimmerstone", "mode": "text"}))["results"]
        assert [h["kind"] for h in observations] == ["observation"]
        assert observations[0]["sessionId"] == sid
        for words in PRIVATE_WORDS:
            assert (await run.request("memory/search", {"query": words, "mode": "text"}))["results"] == []
            near = (await run.request("memory/search", {"query": words}))["results"]  # the nearest, never them
            assert not any(words in h["text"] for h in near), (words, near)
        everything = json.dumps(prompts + observations)
        assert "cobaltfox" not in everything and "<private>" not in everything
