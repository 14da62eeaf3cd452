"""The shop as a web site: ``envgym shop serve``, where a person or a browser agent
shops where a text agent does.

    envgym shop serve --port 8400           # then open http://127.0.0.1:8400/

Each session is one `ShopEnv` episode; its pages are the env's own pages
(`render_html` of the env's `PageView`), and every button posts the env's own
action (``click[BUTTON]``, or ``search[QUERY]`` from the search box), so a
session's reward is the reward the env gives for the same actions.

Routes (HTML unless said):

    GET  /                      the start page: a seed and a difficulty
    GET  /start?seed=N&difficulty=easy  (or POST the form)  a new session,
                                303 to /s/{sid}/
    GET  /s/{sid}/              the session's page
    POST /s/{sid}/act           action=click[BUTTON] | action=search&query=...;
                                steps the env, 303 to /s/{sid}/ (post/redirect/get)
    GET  /s/{sid}/state.json    {"seed", "difficulty", "reward", "terminated",
                                "truncated", "turn", "actions"} (JSON)
    GET  /health                {"status": "ok"} (JSON)

The site's own pages (the start page, errors) are the Jinja2 templates in
``templates/`` (`envgym.templating`, autoescaped).

Session ids are unguessable (``secrets.token_urlsafe``); a form body over
`MAX_BODY_BYTES` is refused (413), at most `max_sessions` live at once (the
least recently used go first), one request at a time steps a session, and
nothing of the env's ``info["privileged"]`` (the goal, the satisfying
products) is ever sent. Serves on 127.0.0.1 or a Unix socket only.
"""

import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from envgym.envs.shop.html import render_html
from envgym.extras import require
from envgym.serving import AppServer, BackgroundServer, app_server
from envgym.templating import render_template

__all__ = [
    "DEFAULT_PORT",
    "MAX_BODY_BYTES",
    "ShopSite",
    "create_app",
    "env_action",
    "serve",
]

DEFAULT_PORT = 8400
#: The largest form body a POST may send (a search box's query is at most 500 characters).
MAX_BODY_BYTES = 16 * 1024
MAX_QUERY_CHARS = 500
MAX_ACTION_CHARS = 1000
MAX_SEED = 2**63 - 1
#: How long a request waits for another request of the same session to finish.
LOCK_TIMEOUT_S = 30.0

# No script, no outside resource, no framing: the pages need none of them.
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
        "base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _require(module: str) -> Any:
    return require(module, extra="remote", purpose="the shop's web site")


def _default_factory() -> Any:
    from envgym.envs.shop.shop import ShopEnv

    return ShopEnv(observation="html")


@dataclass
class Session:
    """One shopper's episode: the env, what was done in it and how it stands."""

    env: Any
    seed: int
    difficulty: str
    actions: list[str] = field(default_factory=list)
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def over(self) -> bool:
        return self.terminated or self.truncated

    def state(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "difficulty": self.difficulty,
            "reward": self.reward,
            "terminated": self.terminated,
            "truncated": self.truncated,
            "turn": self.env.unwrapped.turn,
            "actions": list(self.actions),
        }


class Sessions:
    """The live sessions by id, the least recently used evicted past `max_sessions`."""

    def __init__(self, max_sessions: int) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, not {max_sessions}")
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def add(self, session: Session) -> str:
        sid = secrets.token_urlsafe(16)
        with self._lock:
            self._sessions[sid] = session
            while len(self._sessions) > self.max_sessions:
                _, old = self._sessions.popitem(last=False)
                old.env.close()
        return sid

    def get(self, sid: str) -> Session | None:
        with self._lock:
            session = self._sessions.get(sid)
            if session is not None:
                self._sessions.move_to_end(sid)
            return session


class _Refused(Exception):
    """A request the site answers with an error page: `status` and what to do."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _parse_seed(text: str | None) -> int:
    if text is None or not text.strip():
        return secrets.randbelow(2**31)
    try:
        seed = int(text.strip())
    except ValueError:
        raise _Refused(400, f"the seed must be a whole number, not {text[:40]!r}") from None
    if not 0 <= seed <= MAX_SEED:
        raise _Refused(400, f"the seed must be from 0 to {MAX_SEED}")
    return seed


def env_action(fields: dict[str, str]) -> str:
    """The env's action for a posted form: ``search[QUERY]`` or ``click[BUTTON]``."""
    action = fields.get("action", "")
    if action == "search":
        query = fields.get("query", "")
        if len(query) > MAX_QUERY_CHARS:
            raise _Refused(400, f"the search query is over {MAX_QUERY_CHARS} characters")
        # A "]" would end the command early; brackets are no words to search for.
        query = " ".join(query.replace("[", " ").replace("]", " ").split())
        return f"search[{query}]"
    if action.startswith("click[") and action.endswith("]") and len(action) <= MAX_ACTION_CHARS:
        return action
    raise _Refused(400, "send action=click[BUTTON], or action=search with query=YOUR QUERY")


def _start_page(difficulties: tuple[str, ...], default: str) -> str:
    return render_template(
        "envgym.envs.shop", "start.html", title="start", difficulties=difficulties, default=default
    )


def create_app(
    env_factory: Callable[[], Any] | None = None,
    *,
    max_sessions: int = 1000,
    difficulty: str = "easy",
) -> Any:
    """The site's FastAPI app. `env_factory()` makes one `ShopEnv` per session (default
    ``ShopEnv(observation="html")``); `difficulty` is the start page's choice."""
    fastapi = _require("fastapi")
    from fastapi import Request
    from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
    from starlette.concurrency import run_in_threadpool

    from envgym.envs.shop.shop import ShopEnv

    factory = env_factory or _default_factory
    difficulties = tuple(ShopEnv.presets)
    if difficulty not in difficulties:
        raise ValueError(f"difficulty must be one of {', '.join(difficulties)}, not {difficulty!r}")
    default_level = difficulty
    sessions = Sessions(max_sessions)
    app = fastapi.FastAPI(title="envgym shop", version="1", docs_url=None, redoc_url=None)
    app.state.sessions = sessions

    @app.middleware("http")
    async def security_headers(request: Request, call_next: Callable[[Request], Any]) -> Response:
        response = await call_next(request)
        for name, value in _HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    @app.exception_handler(_Refused)
    async def refused(request: Request, exc: _Refused) -> Response:
        if request.url.path.endswith(".json"):
            return JSONResponse({"error": exc.message}, status_code=exc.status)
        page = render_template(
            "envgym.envs.shop", "error.html", title="error", status=exc.status, message=exc.message
        )
        return HTMLResponse(page, status_code=exc.status)

    def session_or_404(sid: str) -> Session:
        session = sessions.get(sid)
        if session is None:
            raise _Refused(
                404,
                "no such session (it ended long ago, the server restarted, or the "
                "address is wrong); start a new session",
            )
        return session

    async def form_fields(request: Request) -> dict[str, str]:
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            raise _Refused(415, "send the form as application/x-www-form-urlencoded")
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            raise _Refused(413, f"the form is over {MAX_BODY_BYTES} bytes")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                raise _Refused(413, f"the form is over {MAX_BODY_BYTES} bytes")
        try:
            pairs = parse_qsl(body.decode("utf-8", "replace"), max_num_fields=20)
        except ValueError:
            raise _Refused(400, "the form has too many fields") from None
        fields: dict[str, str] = {}
        for key, value in pairs:
            fields.setdefault(key, value)
        return fields

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/")
    async def start_page() -> HTMLResponse:
        return HTMLResponse(_start_page(difficulties, default_level))

    async def start(seed_text: str | None, level: str | None) -> Response:
        seed = _parse_seed(seed_text)
        level = level or default_level
        if level not in difficulties:
            raise _Refused(400, f"the difficulty must be one of {', '.join(difficulties)}")

        def begin() -> Session:
            env = factory()
            env.reset(seed=seed, options={"difficulty": level})
            return Session(env, seed, level)

        sid = sessions.add(await run_in_threadpool(begin))
        return RedirectResponse(f"/s/{sid}/", status_code=303)

    @app.get("/start")
    async def start_get(seed: str | None = None, difficulty: str | None = None) -> Response:
        return await start(seed, difficulty)

    @app.post("/start")
    async def start_post(request: Request) -> Response:
        fields = await form_fields(request)
        return await start(fields.get("seed"), fields.get("difficulty"))

    @app.get("/s/{sid}/")
    async def show(sid: str) -> HTMLResponse:
        session = session_or_404(sid)
        return HTMLResponse(await run_in_threadpool(_render, session, sid))

    @app.post("/s/{sid}/act")
    async def act(sid: str, request: Request) -> Response:
        session = session_or_404(sid)
        action = env_action(await form_fields(request))
        await run_in_threadpool(_step, session, action)
        return RedirectResponse(f"/s/{sid}/", status_code=303)

    @app.get("/s/{sid}/state.json")
    async def state(sid: str) -> dict[str, Any]:
        return session_or_404(sid).state()

    return app


def _locked(session: Session) -> threading.Lock:
    if not session.lock.acquire(timeout=LOCK_TIMEOUT_S):
        raise _Refused(503, "this session is busy with another request; try again")
    return session.lock


def _step(session: Session, action: str) -> None:
    lock = _locked(session)
    try:
        if session.over:
            return  # the last page stays; the env takes no more steps
        _, reward, terminated, truncated, _info = session.env.step(action)
        session.actions.append(action)
        session.reward += float(reward)
        session.terminated, session.truncated = terminated, truncated
    finally:
        lock.release()


def _render(session: Session, sid: str) -> str:
    lock = _locked(session)
    try:
        view = session.env.unwrapped.page
        if session.truncated:
            turns = session.env.unwrapped.turn
            message = f"The turn limit ({turns}) is reached; nothing was bought."
            view = replace(view, message=message)
        return render_html(view, base=f"/s/{sid}/", start_url="/")
    finally:
        lock.release()


# ------------------------------------------------------------------ serving
def _app_server(
    env_factory: Callable[[], Any] | None,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    uds: str | Path | None = None,
    max_sessions: int = 1000,
    difficulty: str = "easy",
    on_ready: Callable[[str], None] | None = None,
    log_level: str = "warning",
) -> AppServer:
    _require("uvicorn")
    app = create_app(env_factory, max_sessions=max_sessions, difficulty=difficulty)
    # The app first: a missing fastapi leaves no socket.
    return app_server(
        app, host=host, port=port, uds=uds, on_ready=on_ready, log_level=log_level, lifespan="off"
    )


def serve(
    env_factory: Callable[[], Any] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int | None = DEFAULT_PORT,
    uds: str | Path | None = None,
    max_sessions: int = 1000,
    difficulty: str = "easy",
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the site until Ctrl-C (SIGTERM stops it cleanly); `on_ready(address)` is
    called once it accepts connections."""
    _app_server(
        env_factory,
        host=host,
        port=port,
        uds=uds,
        max_sessions=max_sessions,
        difficulty=difficulty,
        on_ready=on_ready,
    ).run()


class ShopSite(BackgroundServer):
    """The site on a background thread of this process (tests, notebooks); a context
    manager. `url` is ``http://127.0.0.1:PORT`` (None on a Unix socket, `uds`).

        with ShopSite(lambda: ShopEnv(num_products=2000, observation="html")) as site:
            httpx.get(site.url + "/")
    """

    thread_name = "envgym-shop-site"

    def __init__(
        self,
        env_factory: Callable[[], Any] | None = None,
        *,
        port: int | None = 0,
        uds: str | Path | None = None,
        max_sessions: int = 1000,
    ) -> None:
        server = _app_server(
            env_factory, port=None if uds else port, uds=uds, max_sessions=max_sessions
        )
        super().__init__(server, uds)
