"""Claude Code's `AskUserQuestion` as an ACP form elicitation (`elicitation/create`, mode "form").

The model asks the user one to four multiple-choice questions; the CLI asks permission to run the tool, and the
answers travel back in the allowed input (`answers`: question text -> the chosen label, several joined by ", "),
which the CLI hands the model as the tool's result. A client that offers form elicitation (`clientCapabilities.
elicitation.form`) shows each question as a field: a choice among the labels, or several for a multi-select one,
and may let the user type another answer (Claude Code's "Other"). Without that capability the question goes out as
a permission request, as before, and the model is told the user did not answer.
"""

from __future__ import annotations

from typing import Any

TOOL = "AskUserQuestion"
MAX_QUESTIONS = 8  # the tool's own schema allows 4; a little slack, never an unbounded form


def _questions(tool_input: dict[str, Any]) -> list[dict[str, Any]] | None:
    questions = tool_input.get("questions")
    if not isinstance(questions, list) or not questions or len(questions) > MAX_QUESTIONS:
        return None
    out = []
    for q in questions:
        if not isinstance(q, dict) or not isinstance(q.get("question"), str) or not q["question"].strip():
            return None
        labels = [o.get("label") for o in q.get("options") or [] if isinstance(o, dict)]
        if not labels or not all(isinstance(label, str) and label for label in labels):
            return None
        out.append(q)
    return out


def form_for(tool_input: dict[str, Any], session_id: str, tool_call_id: str | None) -> dict[str, Any] | None:
    """The `elicitation/create` params for this call, or None when the input is not a well-formed question list."""
    questions = _questions(tool_input)
    if questions is None:
        return None
    properties: dict[str, Any] = {}
    for index, q in enumerate(questions):
        labels = [o["label"] for o in q["options"]]
        details = "; ".join(f"{o['label']}: {o['description']}" for o in q["options"]
                            if isinstance(o.get("description"), str) and o["description"])
        description = q["question"] + (f" ({details})" if details else "")
        title = q.get("header") if isinstance(q.get("header"), str) and q["header"] else q["question"]
        if q.get("multiSelect") is True:
            properties[f"q{index}"] = {"type": "array", "title": title, "description": description,
                                       "items": {"type": "string", "enum": labels}, "minItems": 1}
        else:
            properties[f"q{index}"] = {"type": "string", "title": title, "description": description, "enum": labels}
    message = questions[0]["question"] if len(questions) == 1 else "\n".join(q["question"] for q in questions)
    params: dict[str, Any] = {"sessionId": session_id, "mode": "form", "message": message,
                              "requestedSchema": {"type": "object", "properties": properties,
                                                  "required": sorted(properties)}}
    if tool_call_id:
        params["toolCallId"] = tool_call_id
    return params


def answers_from(tool_input: dict[str, Any], content: Any) -> dict[str, str] | None:
    """The CLI's `answers` from the client's accepted content, or None when a question is left unanswered."""
    questions = _questions(tool_input)
    if questions is None or not isinstance(content, dict):
        return None
    answers: dict[str, str] = {}
    for index, q in enumerate(questions):
        value = content.get(f"q{index}")
        if isinstance(value, list):
            chosen = [str(v).strip() for v in value if isinstance(v, str) and v.strip()]
            text = ", ".join(chosen)
        elif isinstance(value, str):
            text = value.strip()
        else:
            text = ""
        if not text:
            return None
        answers[q["question"]] = text[:2000]  # a typed "Other" answer, bounded
    return answers


def client_offers_forms(client_capabilities: Any) -> bool:
    elicitation = client_capabilities.get("elicitation") if isinstance(client_capabilities, dict) else None
    return isinstance(elicitation, dict) and isinstance(elicitation.get("form"), dict)


def client_offers_urls(client_capabilities: Any) -> bool:
    elicitation = client_capabilities.get("elicitation") if isinstance(client_capabilities, dict) else None
    return isinstance(elicitation, dict) and isinstance(elicitation.get("url"), dict)
