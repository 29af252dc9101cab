// What a TypeScript extension gets for pi's own packages (@earendil-works/pi-coding-agent, pi-ai,
// pi-agent-core; pi-tui adds tui.mjs's components) in the Python pi's sidecar: TypeBox (Type, Static,
// ...) and pi-ai's StringEnum. Type-only imports need nothing; other runtime values are absent.
import * as typebox from "typebox";

export * from "typebox";

export function StringEnum(values, options = {}) {
  return typebox.Type.Unsafe({ type: "string", enum: [...values], ...options });
}
