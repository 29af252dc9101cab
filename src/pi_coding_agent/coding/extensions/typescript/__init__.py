"""pi's TypeScript (and JavaScript) extensions through a Node.js sidecar; see ``host``."""
