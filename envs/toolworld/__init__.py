"""Tool worlds: customer-service domains of stateful tools over a relational
store, a written policy, and a simulated user who holds the goal (Retail-v0,
Airline-v0). `ToolWorldEnv` runs and grades the conversation; a domain supplies
its store, tools, policy and tasks (docs/guides/tool-world.md)."""

from envgym.envs.toolworld.env import Domain, ToolWorldEnv, ToolWorldPreset
from envgym.envs.toolworld.llm_user import LLMUser, LLMUserError
from envgym.envs.toolworld.store import Store
from envgym.envs.toolworld.task import Action, Fact, Task
from envgym.envs.toolworld.tools import Tool, ToolError
from envgym.envs.toolworld.user import SimulatedUser, UserReply

__all__ = [
    "Action",
    "Domain",
    "Fact",
    "LLMUser",
    "LLMUserError",
    "SimulatedUser",
    "Store",
    "Task",
    "Tool",
    "ToolError",
    "ToolWorldEnv",
    "ToolWorldPreset",
    "UserReply",
]
