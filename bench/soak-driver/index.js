// The soak (bench/soak-plan.mjs) driven from inside a real VS Code extension host, through vscode.lm
// as Copilot's agent calls it, against the installed VSIX and the fake gateway's soak scenario. This
// extension shares the process with ours and with whatever else the host runs, so what it samples is
// the host's memory as users have it: V8's young generation sized by everything the host allocated
// since it started, not by our extension alone. Started by bench/soak-host.mjs, which copies
// soak-plan.mjs beside this file and reads the JSON this writes to SOAK_HOST_OUT.
const fs = require('node:fs');
const path = require('node:path');
const v8 = require('node:v8');
const vm = require('node:vm');
const vscode = require('vscode');

const { FLOOR_VENDOR, registerFloor } = require('./floor');

// Ours, or the baseline's (floor.js) when SOAK_HOST_PROVIDER=floor: the same turns either way.
const FLOOR = process.env.SOAK_HOST_PROVIDER === 'floor';
const VENDOR = FLOOR ? FLOOR_VENDOR : 'vercel-ai-gateway';
const MODEL = 'fake/tools';
const TURNS = Number(process.env.SOAK_TURNS ?? 1000);
const RUN_LIMIT_MS = Number(process.env.SOAK_HOST_LIMIT_MS ?? 1_500_000);
const log = (line) => console.log(`[soak-host] ${line}`);

// Samples are read as the host runs, without a forced full collection: no user's host makes one, and
// one made at a low allocation rate lets V8 shrink the young generation VS Code's start had sized
// (64 MB here), which then grows back through the soak: growth the sampling made (rfcs/0005, "The
// soak in VS Code's extension host"). SOAK_HOST_GC=1 forces one before each sample, to see what is
// kept; the host is started without --expose-gc, but V8 lets a process turn the flag on for
// contexts created after it.
const FORCE_GC = process.env.SOAK_HOST_GC === '1';
const gc = FORCE_GC ? (v8.setFlagsFromString('--expose-gc'), vm.runInNewContext('gc')) : () => {};

const statusMb = (pid, name) => {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024;
};
const fds = (pid) => fs.readdirSync(`/proc/${pid}/fd`).length;

function sample(label) {
  gc();
  const memory = process.memoryUsage();
  const sidecar = sidecarPid();
  const young = v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space');
  const mb = (bytes) => bytes / 2 ** 20;
  return {
    label,
    rss: mb(memory.rss),
    anon: statusMb('self', 'RssAnon'),
    file: statusMb('self', 'RssFile'),
    heapUsed: mb(memory.heapUsed),
    heapTotal: mb(memory.heapTotal),
    external: mb(memory.external),
    // The nursery V8 sized for the whole host's allocation rate, and of it the pages it has touched.
    young: mb(young.space_size),
    youngResident: mb(young.physical_space_size),
    fds: fds('self'),
    sidecar,
    sidecarRss: sidecar ? statusMb(sidecar, 'VmRSS') : NaN,
    sidecarFds: sidecar ? fds(sidecar) : NaN,
  };
}

/** The sidecar: our extension's child (this host is its parent, as the extension runs here too). */
function sidecarPid() {
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('gateway_lm')) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

const activeExtensions = () => vscode.extensions.all.filter((e) => e.isActive).map((e) => `${e.id}@${e.packageJSON.version}`);
const COPILOT = 'GitHub.copilot-chat';
const copilot = () => {
  const e = vscode.extensions.getExtension(COPILOT);
  return e ? `${e.id}@${e.packageJSON.version} ${e.isActive ? 'active' : 'installed, not active'}` : 'not installed';
};

async function soakModel(deadline) {
  // The sidecar sets itself up on first start (a venv and a pip install): allow it time.
  for (;;) {
    const [found] = await vscode.lm.selectChatModels({ vendor: VENDOR, id: MODEL });
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`${MODEL} was not listed within the start's limit`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

async function soak() {
  const plan = await import(path.join(__dirname, 'soak-plan.mjs'));
  const result = {
    node: process.version,
    v8: process.versions.v8,
    execArgv: process.execArgv,
    nodeOptions: process.env.NODE_OPTIONS ?? '',
    gc: FORCE_GC ? 'a full collection forced before each sample (SOAK_HOST_GC=1)' : 'none forced: sampled as the host runs',
    pid: process.pid,
    provider: VENDOR,
    turns: TURNS,
    samples: [],
    kills: [],
  };
  result.samples.push(sample('host start'));
  result.copilot = { start: copilot() };
  // Copilot Chat, built into VS Code 1.139, stays disabled (absent from this host) on a fresh
  // browser profile until chat is set up; the UI run's "Chat: Manage Language Models" enables it
  // (/work notes, vscode-host.md). SOAK_HOST_COPILOT=1 does the same here and activates it, for a
  // host that runs it as users' hosts do (its allocations size the young generation too).
  if (process.env.SOAK_HOST_COPILOT === '1') {
    try {
      await vscode.commands.executeCommand('workbench.action.chat.manage');
      for (const until = Date.now() + 60_000; !vscode.extensions.getExtension(COPILOT) && Date.now() < until;) await new Promise((r) => setTimeout(r, 500));
      await vscode.extensions.getExtension(COPILOT)?.activate();
    } catch (error) {
      result.copilot.activateError = String(error && error.message).slice(0, 200);
    }
    result.copilot.activated = copilot();
    result.samples.push(sample('copilot activated'));
  }
  const floor = FLOOR ? registerFloor(MODEL) : undefined;
  const model = await soakModel(Date.now() + 240_000);
  result.samples.push(sample('activated'));
  result.activeExtensions = activeExtensions();

  const task = vscode.LanguageModelChatMessage.User(plan.TASK);
  let history = [task];
  let pending = [];
  let sidecarSince = -Infinity; // the turn the running sidecar was restarted at
  const turns = [];
  const started = Date.now();
  for (let turn = 1; turn <= TURNS; turn++) {
    const planned = plan.faultOf(turn);
    const marker = plan.markerOf(turn, planned);
    const summarising = turn % plan.SUMMARY_EVERY === 0;
    if (pending.length) {
      const results = pending.map((call) => new vscode.LanguageModelToolResultPart(call.callId, [new vscode.LanguageModelTextPart(plan.fileContent(turn))]));
      results.at(-1).content.push(new vscode.LanguageModelTextPart(marker));
      history.push(vscode.LanguageModelChatMessage.User(results));
      pending = [];
    } else if (!summarising) {
      history.push(vscode.LanguageModelChatMessage.User(plan.nextFile(marker)));
    }
    const messages = summarising ? [...history, vscode.LanguageModelChatMessage.User(plan.summarise(marker))] : history;
    const source = new vscode.CancellationTokenSource();
    const watchdog = setTimeout(() => source.cancel(), plan.TURN_LIMIT_MS);
    const t0 = Date.now();
    let text = '';
    const calls = [];
    let error;
    try {
      // Copilot counts every message before it sends.
      for (const message of messages) await model.countTokens(message, source.token);
      const response = await model.sendRequest(
        messages,
        { tools: summarising ? [] : plan.TOOLS, toolMode: vscode.LanguageModelChatToolMode.Auto },
        source.token,
      );
      for await (const part of response.stream) {
        if (part instanceof vscode.LanguageModelTextPart) {
          if (!text && planned.fault === 'kill') {
            // Meant mid-stream, as the bench does it; here the parts reach this consumer through the
            // workbench, so the answer may be complete by then: the record says which.
            const pid = sidecarPid();
            if (pid) process.kill(pid, 'SIGKILL');
            result.kills.push({ turn, killed: pid });
          }
          text += part.value;
        } else if (part instanceof vscode.LanguageModelToolCallPart) calls.push(part);
      }
    } catch (e) {
      error = e;
    }
    clearTimeout(watchdog);
    // What the user reads: a message in our words, none of the client library's, no stack in it
    // (VS Code hands the consumer its own error with our message, not the provider's object).
    const clear = !error || (typeof error.message === 'string' && error.message.trim() !== '' && !plan.LIBRARY.test(error.message));
    turns.push({
      turn,
      ms: Date.now() - t0,
      fault: planned.fault,
      meant: plan.meantToFail(planned),
      ok: !error,
      clear,
      error: error ? String(error.message).slice(0, 120) : undefined,
      cut: source.token.isCancellationRequested,
    });
    source.dispose();
    if (!error && summarising) history = [task, vscode.LanguageModelChatMessage.Assistant(text)];
    else if (!error) {
      history.push(vscode.LanguageModelChatMessage.Assistant([new vscode.LanguageModelTextPart(text), ...calls]));
      pending = calls;
    }
    if (planned.fault === 'kill') {
      // The client restarts it by itself; wait for the new one as the bench does, within a bound.
      const killed = result.kills.at(-1)?.killed;
      let next = killed ? undefined : 'none'; // the floor has no sidecar to wait for
      for (const until = Date.now() + 10_000; (!next || next === killed) && Date.now() < until; next = sidecarPid())
        await new Promise((r) => setTimeout(r, 50));
      Object.assign(result.kills.at(-1) ?? {}, { next, ok: !error });
    }
    if (planned.fault === 'kill') sidecarSince = turn;
    if (turn === sidecarSince + plan.SIDECAR_WARM) result.samples.push(sample(`sidecar warm, turn ${turn}`));
    if (turn === 50 || turn % 100 === 0) {
      result.samples.push(sample(`turn ${turn}`));
      log(`turn ${turn}: ${((Date.now() - started) / 1000).toFixed(0)} s, rss ${result.samples.at(-1).rss.toFixed(1)} MB`);
    }
  }
  result.wallS = (Date.now() - started) / 1000;
  result.samples.push(sample('end'));
  floor?.dispose();
  result.copilot.end = copilot();
  const failed = turns.filter((t) => !t.ok);
  result.succeeded = turns.length - failed.length;
  result.failed = failed.length;
  result.plannedFailures = turns.filter((t) => t.meant).length;
  result.notAsPlanned = turns.filter((t) => t.ok === t.meant).map(({ turn, fault, ok, error }) => ({ turn, fault, ok, error }));
  result.cut = turns.filter((t) => t.cut).length;
  result.longestMs = Math.max(...turns.map((t) => t.ms));
  result.errors = [...new Set(failed.map((t) => t.error))].slice(0, 8);
  result.unclear = turns
    .filter((t) => !t.clear)
    .map(({ turn, error }) => ({ turn, error }))
    .slice(0, 10);
  return result;
}

exports.run = async function run() {
  let timer;
  const overdue = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the soak ran past its limit of ${RUN_LIMIT_MS / 1000} s`)), RUN_LIMIT_MS);
  });
  try {
    const result = await Promise.race([soak(), overdue]);
    fs.writeFileSync(process.env.SOAK_HOST_OUT, JSON.stringify(result, null, 2));
    log(`done: ${result.succeeded} succeeded, ${result.failed} failed, ${result.notAsPlanned.length} not as planned`);
  } catch (error) {
    log(`failed: ${error && error.stack}`);
    throw error;
  } finally {
    clearTimeout(timer);
  }
};
