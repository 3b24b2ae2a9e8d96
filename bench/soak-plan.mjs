// The soak's turn plan, apart from how it is driven: bench/soak.mjs sends it through the bundle under
// a stub `vscode` in a plain node process, bench/soak-host.mjs through vscode.lm in a real
// code-server extension host. One home, so that both measure the same session. No imports: the
// extension host loads this file as it is.

export const FAULT_EVERY = 20; // a fault on turns 10, 30, 50, …
export const FAULTS = ['reset', '429', '500', 'stall'];
export const SUMMARY_EVERY = 25;
export const KILLS = [115, 235]; // turns whose sidecar is killed at their first part
export const IDLE_TIMEOUT_S = 2;
export const MAX_RETRIES = 1;
export const TURN_LIMIT_MS = 60_000; // the watchdog: a turn still going then is cancelled and counted unbounded
export const TURN_TARGET_MS = (IDLE_TIMEOUT_S + 3) * 1000; // a stall ends at idleTimeout; a retry waits ≤ 1 s; a restart is a start
export const SIDECAR_WARM = 65; // turns after a (re)start before its memory counts as the start's
// What a user must never see: the client library's wording, JSON-RPC codes, a stack.
export const LIBRARY = /-32\d{3}|couldn't create connection|Client is not running|Pending response rejected|Code: -\d|\n\s+at /;

export const SETTINGS = {
  'vercelAiGateway.idleTimeout': IDLE_TIMEOUT_S,
  'vercelAiGateway.maxRetries': MAX_RETRIES,
  'vercelAiGateway.requestTimeout': 60,
  // The scenario travels as a header, through the modelOptions setting (the path a user's own headers take).
  'vercelAiGateway.modelOptions': { 'fake/tools': { extraHeaders: { 'x-fake-scenario': 'soak' } } },
};

export const TASK = 'Read the handlers in src/ one file at a time and list the routes each registers.';
export const nextFile = (marker) => `Go on with the next file. ${marker}`;
export const summarise = (marker) => `Summarize the conversation history so far, keeping what the next turns need. ${marker}`;

const TOOL_NAMES = [
  'read_file',
  'grep_search',
  'file_search',
  'semantic_search',
  'list_dir',
  'replace_string_in_file',
  'insert_edit_into_file',
  'create_file',
  'run_in_terminal',
  'get_terminal_output',
  'get_errors',
  'run_tests',
  'test_failure',
  'list_code_usages',
  'get_changed_files',
  'fetch_webpage',
  'open_simple_browser',
  'create_directory',
  'get_project_setup_info',
  'install_extension',
  'run_vscode_command',
  'think',
  'manage_todo_list',
  'github_repo',
];
export const TOOLS = TOOL_NAMES.map((name, i) => ({
  name,
  description: `${name.replaceAll('_', ' ')}: one of the agent's tools, described as Copilot describes them (${i}).`,
  inputSchema: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'The absolute path of the file or folder.' },
      query: { type: 'string', description: 'What to look for.' },
      startLine: { type: 'integer', description: 'The line to start at, 1-based.' },
      endLine: { type: 'integer', description: 'The line to end at, inclusive.' },
    },
    required: ['path'],
  },
}));

export function faultOf(turn) {
  if (KILLS.includes(turn)) return { fault: 'kill', times: 1 };
  if (turn % FAULT_EVERY !== FAULT_EVERY / 2) return { fault: '', times: 0 };
  const n = Math.floor(turn / FAULT_EVERY);
  const fault = FAULTS[n % FAULTS.length];
  // 429 and 500 come before any event, so the sidecar retries them: once (the retry succeeds) or on
  // every attempt (the turn fails with the gateway's error), in turn.
  const times = fault === '429' || fault === '500' ? (Math.floor(n / FAULTS.length) % 2 ? MAX_RETRIES + 1 : 1) : 1;
  return { fault, times };
}

/** The marker the gateway's soak scenario (tests/fake_soak.py) reads from the turn's newest item. */
export const markerOf = (turn, plan) => `[soak:${turn}:${plan.fault}:${plan.times}]`;

/** The outcome the turn's fault should have: a retried fault that hit every attempt, or one after the first event, fails. */
export const meantToFail = ({ fault, times }) => fault === 'kill' || fault === 'reset' || fault === 'stall' || times > MAX_RETRIES;

/** A file's worth of tool output, different every turn (2–6 KB). */
export function fileContent(turn) {
  const lines = [];
  for (let i = 0; i < 40 + (turn % 80); i++) lines.push(`    def handler_${turn}_${i}(self, request):  # route ${(turn * 31 + i) % 997}`);
  return lines.join('\n');
}
