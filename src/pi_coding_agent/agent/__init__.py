"""The agent core: Agent, its run loop, tool execution, argument validation and message queues."""

from pi_coding_agent.agent.agent import Agent
from pi_coding_agent.agent.hooks import AgentHooks

__all__ = ["Agent", "AgentHooks"]
