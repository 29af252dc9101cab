// Renders tool samples and the "Nested tools:" section with the reference pi 1.6.0's own modules,
// for tests/test_codemode_declarations.py. argv: the reference node_modules dir, then the input JSON
// ({ budget, mode, tools: [{ name, description, parameters, outputSchema?, namespace?, exposure? }] }).
const [root, inputJson] = process.argv.slice(2);
const { renderToolSample } = await import(`${root}/@earendil-works/pi-codemode/dist/declarations.js`);
const { createCodemodeDescription } = await import(
  `${root}/@earendil-works/pi-coding-agent/dist/extensions/codemode/tool.js`
);
const input = JSON.parse(inputJson);
const samples = input.tools.map((tool) =>
  renderToolSample({
    name: tool.name,
    description: tool.description,
    inputSchema: tool.parameters,
    outputSchema: tool.outputSchema ?? { type: "string" },
  }),
);
const namespaces = new Map(input.tools.filter((t) => t.namespace).map((t) => [t.name, { name: t.namespace }]));
const deferred = new Set(input.tools.filter((t) => t.exposure === "deferred").map((t) => t.name));
const description = createCodemodeDescription(input.tools, { namespaces, deferred, inlineBudget: input.budget });
const at = description.indexOf("Nested tools:");
console.log(JSON.stringify({ samples, nested: at === -1 ? "" : description.slice(at) }));
