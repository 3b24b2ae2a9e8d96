// The `vscode` module for the shipped bundle under plain Node: the test stub's real classes and enum
// values, plus what activate() touches (the language model registry, commands,
// events, output channels). Members nobody relies on answer with a no-op.
'use strict';
const stub = require('./from-tests.cjs').vscodeStub();

const noop = new Proxy(function () {}, {
  get: (_target, key) => (key === 'then' || typeof key === 'symbol' ? undefined : noop),
  apply: () => noop,
  construct: () => noop,
});
const event = () => () => ({ dispose() {} });
const withDefaults = (object) =>
  new Proxy(object, {
    get: (target, key) => (key in target || typeof key === 'symbol' ? target[key] : key.startsWith('onDid') || key.startsWith('onWill') ? event() : noop),
  });

const registered = { providers: new Map(), commands: new Map(), tools: [], channels: [] };

class LanguageModelChatMessage {
  constructor(role, content, name) {
    this.role = role;
    this.content = typeof content === 'string' ? [new stub.LanguageModelTextPart(content)] : content;
    this.name = name;
  }
  static User(content, name) {
    return new LanguageModelChatMessage(1, content, name);
  }
  static Assistant(content, name) {
    return new LanguageModelChatMessage(2, content, name);
  }
}

/** An output channel that keeps its lines until the bench reads and clears them (VS Code's own
 * keeps nothing in the extension host). */
function outputChannel(name) {
  const lines = [];
  const log = (level) => (message) => lines.push(`[${level}] ${message}`);
  const channel = withDefaults({
    name,
    lines,
    logLevel: 2,
    onDidChangeLogLevel: event(),
    trace: log('trace'),
    debug: log('debug'),
    info: log('info'),
    warn: log('warn'),
    error: log('error'),
    append: log('out'),
    appendLine: log('out'),
    replace() {},
    clear() {},
    show() {},
    hide() {},
    dispose() {},
  });
  registered.channels.push(channel);
  return channel;
}

module.exports = withDefaults({
  ...stub,
  version: '1.139.0',
  LanguageModelChatMessage,
  LanguageModelChatMessageRole: { User: 1, Assistant: 2, System: 3 },
  Disposable: class Disposable {
    constructor(fn) {
      this.fn = fn;
    }
    static from(...items) {
      return new this(() => items.forEach((i) => i?.dispose?.()));
    }
    dispose() {
      this.fn?.();
    }
  },
  Uri: { file: (fsPath) => ({ fsPath, scheme: 'file', toString: () => `file://${fsPath}` }), parse: (s) => ({ fsPath: s, toString: () => s }) },
  registered,
  lm: withDefaults({
    registerLanguageModelChatProvider(vendor, provider) {
      registered.providers.set(vendor, provider);
      return { dispose: () => registered.providers.delete(vendor) };
    },
    // VS Code builds a new array of new objects on every read; this stand-in costs less, so it
    // flatters any code that reads it often (rfcs/0005, "Measured costs").
    get tools() {
      return registered.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema, tags: [], source: undefined }));
    },
  }),
  commands: withDefaults({
    registerCommand(id, fn) {
      registered.commands.set(id, fn);
      return { dispose: () => registered.commands.delete(id) };
    },
    executeCommand: async (id, ...args) => registered.commands.get(id)?.(...args),
  }),
  workspace: withDefaults({ ...stub.workspace, workspaceFolders: undefined, onDidChangeConfiguration: event(), textDocuments: [] }),
  window: withDefaults({
    ...stub.window,
    createOutputChannel: outputChannel,
    showInputBox: async () => undefined,
    showQuickPick: async () => undefined,
    showWarningMessage: async () => undefined,
    showInformationMessage: async () => undefined,
  }),
  languages: withDefaults({}),
  env: withDefaults({ language: 'en', appName: 'bench', machineId: 'bench', sessionId: 'bench', uriScheme: 'vscode' }),
  extensions: withDefaults({ ...stub.extensions, all: [] }),
});
