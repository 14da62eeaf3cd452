"""The env server's messages as pydantic models: WebSocket frames both ways, and the
replies of ``GET /health`` and ``GET /schema``.

`envgym.remote.protocol` says what the wire format is and holds what clients
need (error codes, close codes, spaces as JSON); it imports no pydantic. This
module is the server's side: `read_request` validates a client frame straight
from its JSON text (one pass in pydantic's Rust core, as cheap as
``json.loads``) and turns a refusal into an error frame that says what to
send instead; `observation_reply`, `state_reply` and `error_reply` write the
server's frames. The shapes are OpenEnv's (``WSStepMessage``,
``WSObservationResponse``, ...), so OpenEnv's own clients read them.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
)

from envgym.remote.protocol import ErrorCode, to_jsonable

__all__ = [
    "FORK_REQUESTS",
    "BadRequest",
    "CloseRequest",
    "ErrorReply",
    "ForkReply",
    "ForkRequest",
    "HealthReply",
    "ObservationReply",
    "Request",
    "ResetRequest",
    "SchemaReply",
    "SessionState",
    "SnapshotReply",
    "SnapshotRequest",
    "ReleaseReply",
    "ReleaseRequest",
    "RestoreRequest",
    "StateReply",
    "StateRequest",
    "StepRequest",
    "error_reply",
    "fork_reply",
    "observation_reply",
    "read_request",
    "snapshot_reply",
    "state_reply",
]


# ------------------------------------------------------- client to server
class ResetData(BaseModel):
    """What ``{"type": "reset", "data": {...}}`` may carry; every field is optional."""

    model_config = ConfigDict(extra="forbid")

    seed: Annotated[StrictInt, Field(ge=0)] | None = Field(
        None, description="seeds the episode; null continues the env's random stream"
    )
    options: dict[str, Any] | None = Field(None, description="the env's reset options")
    episode_id: StrictStr | None = Field(None, description="names the episode; default: new")


class StepData(BaseModel):
    """What ``{"type": "step", "data": {...}}`` carries: the model's reply."""

    model_config = ConfigDict(extra="forbid")

    action: StrictStr = Field(description="the model's whole reply, e.g. <answer>Up</answer>")
    metadata: dict[str, Any] | None = Field(
        None, description="OpenEnv's action metadata; envgym envs ignore it"
    )


class ResetRequest(BaseModel):
    type: Literal["reset"]
    data: ResetData | None = None


class StepRequest(BaseModel):
    type: Literal["step"]
    data: StepData


class StateRequest(BaseModel):
    type: Literal["state"]
    data: dict[str, Any] | None = None


class CloseRequest(BaseModel):
    type: Literal["close"]
    data: dict[str, Any] | None = None


#: A handle or fork token: `secrets.token_urlsafe(16)` is 22 characters.
Token = Annotated[StrictStr, Field(min_length=1, max_length=128)]


class SnapshotRequest(BaseModel):
    """Keep the session's current state on the server; the reply names it by a handle."""

    type: Literal["snapshot"]
    data: dict[str, Any] | None = None


class RestoreData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    handle: Token = Field(description="a handle from a snapshot reply of this server")


class RestoreRequest(BaseModel):
    """Put the session into the state a handle names (the reply is a state frame)."""

    type: Literal["restore"]
    data: RestoreData


class ReleaseRequest(BaseModel):
    """Drop a snapshot the server keeps, before its time to live runs out."""

    type: Literal["release"]
    data: RestoreData


class ForkData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    handle: Token | None = Field(
        None, description="a handle from a snapshot reply; null: the session's current state"
    )
    n: Annotated[StrictInt, Field(ge=1, le=4096)] = Field(1, description="sessions to make")


class ForkRequest(BaseModel):
    """Make n new sessions in a state; clients attach to them at /ws?fork=<token>."""

    type: Literal["fork"]
    data: ForkData | None = None


#: One client frame; the ``type`` field picks the model.
Request = Annotated[
    StepRequest
    | ResetRequest
    | StateRequest
    | CloseRequest
    | SnapshotRequest
    | RestoreRequest
    | ForkRequest
    | ReleaseRequest,
    Field(discriminator="type"),
]
_REQUEST: TypeAdapter[Request] = TypeAdapter(Request)
#: The requests of envgym's fork extension (`envgym.remote.forks` answers them).
FORK_REQUESTS = (SnapshotRequest, RestoreRequest, ForkRequest, ReleaseRequest)

_HELP = {
    "reset": "reset takes 'seed' (int >= 0), 'options' (object) and 'episode_id' (string)",
    "restore": "restore takes 'handle' (a string from a snapshot reply)",
    "release": "release takes 'handle' (a string from a snapshot reply)",
    "fork": "fork takes 'handle' (a string from a snapshot reply, or null) and 'n' (int >= 1)",
}
_STEP_HELP = 'a step message is {"type": "step", "data": {"action": "<the model\'s reply>"}}'


class BadRequest(ValueError):
    """A client frame the server cannot act on; `code` is its `ErrorCode`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def read_request(raw: str | bytes) -> Request:
    """The client frame `raw` as its model; `BadRequest` says what is wrong and what to send."""
    try:
        return _REQUEST.validate_json(raw)
    except ValidationError as exc:
        raise _explain(raw, exc.errors(include_url=False)) from None


def _explain(raw: str | bytes, errors: list[Any]) -> BadRequest:
    """pydantic's complaints about `raw`, as one error a person (or a model) can act on."""
    first = errors[0]
    kind, where = first["type"], first["loc"]
    if kind == "json_invalid":
        text = raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")
        shown = text if len(text) <= 80 else text[:77] + "..."
        return BadRequest(
            ErrorCode.INVALID_JSON,
            f"message is not valid JSON ({first['msg']}): {shown!r}; send one JSON object per "
            'text frame, e.g. {"type": "reset", "data": {"seed": 0}}',
        )
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        tag = first.get("ctx", {}).get("tag")
        return BadRequest(
            ErrorCode.UNKNOWN_TYPE,
            f"unknown message type {tag!r}; send one of 'reset', 'step', 'state', 'close', "
            "'snapshot', 'restore', 'fork', 'release'",
        )
    if not where:
        return BadRequest(
            ErrorCode.VALIDATION_ERROR,
            f"expected a JSON object with a 'type' field, got {type(first['input']).__name__}",
        )
    message_type = where[0]
    data = json.loads(raw).get("data") or {}  # valid JSON: only its shape was refused
    if message_type == "step" and isinstance(data, dict):
        action = data.get("action")
        return BadRequest(
            ErrorCode.VALIDATION_ERROR,
            f"{_STEP_HELP}; got data with fields {sorted(data)}"
            + ("" if action is None or isinstance(action, str) else " and a non-text action"),
        )
    if kind == "missing":
        return BadRequest(
            ErrorCode.VALIDATION_ERROR,
            f"{message_type} needs '{where[-1]}'; {_HELP.get(str(message_type), '')}",
        )
    if where[1:] == ("data",):
        return BadRequest(
            ErrorCode.VALIDATION_ERROR, f"'data' must be a JSON object, got {type(data).__name__}"
        )
    unknown = sorted(str(e["loc"][-1]) for e in errors if e["type"] == "extra_forbidden")
    if unknown:
        return BadRequest(
            ErrorCode.VALIDATION_ERROR,
            f"unknown {message_type} field(s) {unknown}; {_HELP.get(message_type, '')}",
        )
    field, value = where[-1], first["input"]
    wanted = {
        "seed": "an integer >= 0 or null",
        "options": "an object or null",
        "episode_id": "a string",
        "handle": "a handle (a string) from a snapshot reply of this server",
        "n": "a whole number from 1 to 4096",
    }.get(str(field))
    if wanted is None:
        return BadRequest(
            ErrorCode.VALIDATION_ERROR, f"{'.'.join(map(str, where))}: {first['msg']}"
        )
    return BadRequest(ErrorCode.VALIDATION_ERROR, f"{field} must be {wanted}, got {value!r}")


# ------------------------------------------------------- server to client
class _Reply(BaseModel):
    # NaN and infinities go out as JSON's NaN/Infinity, as Python's json writes them,
    # rather than as null (which a client would read as a missing reward).
    model_config = ConfigDict(ser_json_inf_nan="constants")


class Observation(_Reply):
    text: str = Field(description="what the model reads")
    info: dict[str, JsonValue] = Field(description="the env's info dict, as JSON")


class ObservationMetadata(_Reply):
    terminated: bool
    truncated: bool
    episode_id: str
    turn: int


class ObservationData(_Reply):
    observation: Observation
    reward: float
    done: bool = Field(description="terminated or truncated")
    metadata: ObservationMetadata


class ObservationReply(_Reply):
    """The reply to ``reset`` and ``step`` (OpenEnv's ``WSObservationResponse``)."""

    type: Literal["observation"] = "observation"
    data: ObservationData


class SessionState(_Reply):
    """The server's view of one session (the reply to ``state``)."""

    episode_id: str | None
    step_count: int = Field(description="turns in this episode so far")
    env_id: str
    running: bool = Field(description="an episode is running: step may be sent")
    terminated: bool
    truncated: bool
    episode_return: float


class StateReply(_Reply):
    type: Literal["state"] = "state"
    data: SessionState


class ErrorData(_Reply):
    # Some errors carry more: the env's exception type, the session limit.
    model_config = ConfigDict(extra="allow")

    message: str = Field(description="what happened and what to do")
    code: str = Field(description="an envgym.remote.protocol.ErrorCode")


class ErrorReply(_Reply):
    """An error; the session stays open unless the server also closes it."""

    type: Literal["error"] = "error"
    data: ErrorData


def observation_reply(
    text: str,
    info: Any,
    *,
    reward: float,
    terminated: bool,
    truncated: bool,
    episode_id: str,
    turn: int,
) -> str:
    """The JSON text answering ``reset`` and ``step``.

    `info` values JSON cannot hold (tuples, sets, numpy values, non-text keys)
    go through `to_jsonable` first; most info dicts are plain JSON, so that
    (slower) conversion runs only when validation refuses one.
    """
    data = {
        "observation": {"text": text, "info": info},
        "reward": float(reward),
        "done": bool(terminated or truncated),
        "metadata": {
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "episode_id": episode_id,
            "turn": turn,
        },
    }
    try:
        reply = ObservationReply(data=data)
    except ValidationError:
        data["observation"] = {"text": text, "info": to_jsonable(info)}
        reply = ObservationReply(data=data)
    return reply.model_dump_json()


def state_reply(state: SessionState) -> str:
    """The JSON text answering ``state``."""
    return StateReply(data=state).model_dump_json()


def error_reply(code: str, message: str, **extra: Any) -> str:
    """The JSON text of an error frame; `extra` fields go in its data, made JSON-safe."""
    return ErrorReply(
        data=ErrorData(message=message, code=code, **to_jsonable(extra))
    ).model_dump_json()


class SnapshotData(_Reply):
    handle: str = Field(description="names the state on the server; restore or fork it")
    turn: int = Field(description="turns into the episode the state is")
    expires_in_s: float = Field(description="seconds the handle lives (--snapshot-ttl)")


class SnapshotReply(_Reply):
    """The reply to ``snapshot``: a handle, and nothing of the state itself."""

    type: Literal["snapshot"] = "snapshot"
    data: SnapshotData


class ForkReplyData(_Reply):
    sessions: list[str] = Field(description="tokens; open /ws?fork=<token> to attach to one")
    expires_in_s: float = Field(description="seconds a session waits to be attached")


class ForkReply(_Reply):
    """The reply to ``fork``: one token per new session."""

    type: Literal["fork"] = "fork"
    data: ForkReplyData


class ReleaseData(_Reply):
    released: bool = Field(description="false: the server held no snapshot by that handle")


class ReleaseReply(_Reply):
    """The reply to ``release``."""

    type: Literal["release"] = "release"
    data: ReleaseData


def snapshot_reply(handle: str, turn: int, expires_in_s: float) -> str:
    """The JSON text answering ``snapshot``."""
    data = SnapshotData(handle=handle, turn=turn, expires_in_s=expires_in_s)
    return SnapshotReply(data=data).model_dump_json()


def fork_reply(sessions: list[str], expires_in_s: float) -> str:
    """The JSON text answering ``fork``."""
    data = ForkReplyData(sessions=sessions, expires_in_s=expires_in_s)
    return ForkReply(data=data).model_dump_json()


# ------------------------------------------------------------------- HTTP
class TextSpaceDescription(BaseModel):
    """A `gymnasium.spaces.Text` (`protocol.text_space_to_json`); the charset keeps its order."""

    type: Literal["Text"]
    min_length: int
    max_length: int
    charset: str


class HealthReply(BaseModel):
    """``GET /health``: the server is up, and how many sessions it holds."""

    status: Literal["healthy"] = "healthy"
    env_id: str
    sessions: int
    max_sessions: int
    sessions_served: int
    sessions_refused: int
    calls_past_deadline: int = Field(description="env calls past --call-timeout still running")
    send_privileged: bool
    snapshots: int = Field(0, description="snapshot handles the server holds")
    pending_forks: int = Field(0, description="forked sessions not yet attached to")


class MetadataReply(BaseModel):
    """``GET /metadata``: the env's name and description, in the fields of OpenEnv's
    ``EnvironmentMetadata`` (its tooling and validator read them)."""

    name: str
    description: str
    readme_content: str | None = None
    version: str | None = None
    author: str | None = None
    documentation_url: str | None = None


class SchemaReply(BaseModel):
    """``GET /schema``: OpenEnv's three JSON Schemas, then the env and the server's limits."""

    action: dict[str, Any] = Field(description="JSON Schema of a step's data")
    observation: dict[str, Any] = Field(description="JSON Schema of an observation")
    state: dict[str, Any] = Field(description="JSON Schema of a state reply's data")
    env_id: str
    env_kwargs: dict[str, Any]
    action_space: TextSpaceDescription
    observation_space: TextSpaceDescription
    protocol_version: int
    envgym_version: str
    max_sessions: int
    idle_timeout_s: float | None
    call_timeout_s: float | None
    max_message_bytes: int
    send_privileged: bool
    max_snapshots: int | None = None
    max_snapshot_bytes: int | None = None
    snapshot_ttl_s: float | None = None

    @classmethod
    def describe(
        cls,
        action_space: dict[str, Any],
        observation_space: dict[str, Any],
        send_privileged: bool,
        **fields: Any,
    ) -> SchemaReply:
        """The schema of a server whose spaces are `action_space` and `observation_space`
        (as `protocol.text_space_to_json` writes them); `fields` are the rest."""
        action = StepData.model_json_schema()
        action["properties"]["action"]["maxLength"] = action_space["max_length"]
        observation = Observation.model_json_schema()
        observation["properties"]["text"]["maxLength"] = observation_space["max_length"]
        if not send_privileged:
            observation["properties"]["info"]["description"] += ", without 'privileged'"
        return cls(
            action=action,
            observation=observation,
            state=SessionState.model_json_schema(),
            action_space=action_space,
            observation_space=observation_space,
            send_privileged=send_privileged,
            **fields,
        )
