// The LanguageModelChatProvider: VS Code's calls → sidecar requests, streamed parts → progress.
import * as vscode from 'vscode';
import { Approvals } from './approval';
import type { ChatResult, ConfigurationSchema, HostPricing, ModelEntry, StreamPart, UsagePart } from './contract';
import { isShown } from './curate';
import { fromRpcError, isCancellation } from './errors';
import { type Group, groupOf } from './keys';
import { plain } from './notify';
import type { SpendAnswer } from './guard';
import { spendLimitOf } from './records';
import type { ChatParams } from './contract';
import type { Refusal } from './records';
import type { Rpc } from './sidecar/rpc';
import { TokenCounter, unlessCancelled } from './counts/memo';
import { ToolPrefetch, type ToolInfo } from './counts/prefetch';
import { promptScale, serializeMessage, soleText, ThinkingMode, toResponsePart, usageDataPart } from './wire';

export interface ProviderHooks {
  /** The default key (the environment's, or one stored before provider groups): the key of the list
   * VS Code asks for without a group. */
  apiKey(): Promise<string | undefined>;
  /** VS Code listed a provider group's models (extension/keys.ts keeps its key: for the group's
   * requests, for redaction and for the migration of a stored key). */
  onGroup?(group: Group): void;
  /** The key of the provider group tagged `tag`, as VS Code last listed it (extension/keys.ts). */
  groupKey?(tag: string): string | undefined;
  thinking(): ThinkingMode;
  /** The ids and glob patterns of `picker.models` (extension/curate.ts); none: every model is offered. */
  shown?(): readonly string[];
  loadCache(): Promise<ModelEntry[]>;
  saveCache(models: ModelEntry[]): Promise<void>;
  /** `group`: the tag of the provider group the request went out with; undefined: the default key. */
  /** `served`: the entry of the model that answered, when a team routing rule had another answer (usage.servedModel). */
  onUsage(model: ModelEntry | undefined, usage: UsagePart, requestId: string, group?: string, served?: ModelEntry): void;
  /** The spend guard refused a request: ask the user (extension/guard.ts). Without it, the refusal
   * is an error like any other. */
  confirmSpend?(refusal: Refusal): Promise<SpendAnswer>;
  /** The tools Copilot will offer (vscode.lm.tools: a new array on every read). */
  tools(): readonly ToolInfo[];
  /** A chat request arrived; `initiator` is the calling extension's id (VS Code 1.109+), else undefined. */
  onRequest?(initiator: string | undefined): void;
  log: Pick<vscode.LogOutputChannel, 'info' | 'warn' | 'error'>;
}

let sequence = 0;
const MAX_SPEND_QUESTIONS = 3;
const REFRESH_INTERVAL_MS = 60_000;
// Calibrations arrive after responses, often several at once: one catalogue fetch (and at most one
// change event, which re-renders the picker) for a burst of them.
export const WINDOW_DEBOUNCE_MS = 2_000;

export class GatewayChatProvider implements vscode.LanguageModelChatProvider<vscode.LanguageModelChatInformation> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeLanguageModelChatInformation = this.changed.event;
  private models: ModelEntry[] = [];
  private refreshing: Promise<void> | undefined;
  private fetchedAt = 0; // when the catalogue last came back
  private served: ModelEntry[] | undefined; // the list VS Code was last given
  readonly tokens: TokenCounter;
  private readonly prefetch: ToolPrefetch;
  private streaming = 0; // chats under way: background counting waits for them
  private windowTimer: NodeJS.Timeout | undefined;
  readonly approvals = new Approvals();

  constructor(
    private readonly rpc: Rpc,
    private readonly hooks: ProviderHooks,
  ) {
    this.tokens = new TokenCounter(rpc);
    this.tokens.cancelled = () => new vscode.CancellationError();
    this.prefetch = new ToolPrefetch(this.tokens, {
      tools: () => hooks.tools(),
      targets: () => this.prefetchTargets(),
      busy: () => this.streaming > 0,
    });
  }

  /** VS Code asks once without a group (the default key's list) and once per provider group of the
   * Language Models editor, with that group's settings, its key among them (VS Code 1.133+; the
   * field is typed in a proposal). Every list is the same catalogue (the gateway lists its models
   * without a key); each group's entries carry its tag, so a request goes out with that group's key
   * (rfcs/0010). */
  async provideLanguageModelChatInformation(
    options: { silent: boolean; configuration?: unknown },
    _token: vscode.CancellationToken,
  ): Promise<vscode.LanguageModelChatInformation[]> {
    const group = groupOf(options.configuration);
    if (group === 'keyless') {
      this.hooks.log.info('A Vercel AI Gateway provider group has no API key: Update API Key on it in the Language Models editor lists its models.');
      return [];
    }
    if (group) this.hooks.onGroup?.(group);
    else if (!(await this.hooks.apiKey())) {
      return []; // no default key: keys live in provider groups (Add Models in the Language Models editor)
    }
    if (this.models.length === 0) this.adopt(await this.hooks.loadCache());
    // VS Code asks several times in a row (and again after every change event): one fetch a minute
    // at most, or each answer would re-render the picker under the user's mouse.
    const refresh = Date.now() - this.fetchedAt > REFRESH_INTERVAL_MS ? this.refresh() : undefined;
    if (this.models.length === 0) await refresh; // first run ever: nothing cached to show yet
    this.served = this.models;
    if (this.models.length) this.prefetch.start(); // Copilot's first walk will ask for the tool strings
    const shown = this.hooks.shown?.() ?? [];
    return this.models.map((model) => ({ ...toChatInformation(model, shown), ...(group ? { group: group.tag } : {}) }));
  }

  /** Fetches the catalogue now; fires the change event when VS Code was served another list. */
  refresh(): Promise<void> {
    this.refreshing ??= this.fetchModels().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  /** The catalogue as VS Code was given it: the disk cache, or a fetch when there is none yet. */
  async catalogue(): Promise<ModelEntry[]> {
    if (this.models.length === 0) this.adopt(await this.hooks.loadCache());
    if (this.models.length === 0) await this.refresh();
    return this.models;
  }

  notifyChanged(): void {
    this.changed.fire();
  }

  /** The sidecar learned a factor that moves a model's window (gateway/calibration): fetch the list
   * once the burst is over; fetchModels fires the change event if VS Code was served another list. */
  windowMoved(): void {
    this.refreshSoon();
  }

  /** The sidecar fetched the models' metrics and they changed (gateway/metrics, rfcs/0003 "Model
   * metrics"): the list carries them, fetched as after a calibration. */
  metricsChanged(): void {
    this.refreshSoon();
  }

  private refreshSoon(): void {
    clearTimeout(this.windowTimer);
    this.windowTimer = setTimeout(() => void this.refresh(), WINDOW_DEBOUNCE_MS);
  }

  /** Extensions came or went: their tools with them. */
  toolsMayHaveChanged(): void {
    this.prefetch.changed();
  }

  dispose(): void {
    this.prefetch.dispose();
    clearTimeout(this.windowTimer);
    this.changed.dispose();
  }

  private async fetchModels(): Promise<void> {
    try {
      const { models } = await this.rpc.request('gateway/models', {});
      this.fetchedAt = Date.now();
      if (JSON.stringify(models) === JSON.stringify(this.models)) return;
      this.adopt(models);
      this.prefetch.changed(); // the tokenizer most models use may be another
      await this.hooks.saveCache(models);
      // The list changed since VS Code was last served. A first start's callers have not been
      // served yet and are waiting for this very list: telling them would only make VS Code ask again.
      if (this.served !== undefined) this.changed.fire();
    } catch (error) {
      this.hooks.log.warn(`Could not refresh the model list: ${fromRpcError(error).message}`);
    }
  }

  private adopt(models: ModelEntry[]): void {
    this.models = models;
    this.tokens.setTokenizers(models);
  }

  /** A model id for each tokenizer worth counting the tools for: the one most models use, and those
   * of the models Copilot asked about since activation. Not every tokenizer of the list: each one
   * the sidecar loads costs it memory and a third of a second. */
  private prefetchTargets(): string[] {
    const models = new Map<string, string>(); // tokenizer → the first model with it
    const many = new Map<string, number>();
    for (const { id, tokenizer } of this.models) {
      if (!tokenizer) continue;
      if (!models.has(tokenizer)) models.set(tokenizer, id);
      many.set(tokenizer, (many.get(tokenizer) ?? 0) + 1);
    }
    const common = [...many].sort((a, b) => b[1] - a[1])[0]?.[0];
    const targets = new Map<string, string>();
    if (common) targets.set(common, models.get(common)!);
    for (const model of this.tokens.asked()) {
      const tokenizer = this.tokens.tokenizerOf(model);
      if (!targets.has(tokenizer)) targets.set(tokenizer, model);
    }
    return [...targets.values()];
  }

  async provideLanguageModelChatResponse(
    model: vscode.LanguageModelChatInformation,
    messages: readonly vscode.LanguageModelChatRequestMessage[],
    options: vscode.ProvideLanguageModelChatResponseOptions,
    progress: vscode.Progress<vscode.LanguageModelResponsePart>,
    token: vscode.CancellationToken,
  ): Promise<void> {
    const requestId = `chat-${Date.now().toString(36)}-${++sequence}`;
    const initiator = (options as { requestInitiator?: unknown }).requestInitiator; // not in @types/vscode 1.106
    this.hooks.onRequest?.(typeof initiator === 'string' ? initiator : undefined);
    const thinking = this.hooks.thinking();
    // A group's model goes out with that group's key and no other: one VS Code no longer lists (the
    // group was deleted in another window) is refused by the sidecar (errors.group_without_key).
    const group = (model as ChatInformation).group;
    const apiKey = typeof group === 'string' ? this.hooks.groupKey?.(group) : await this.hooks.apiKey();
    const subscription = this.rpc.onParts(requestId, (parts) => reportParts(parts, thinking, progress));
    const params: ChatParams = {
      requestId,
      model: model.id,
      messages: messages.map((m) => serializeMessage(m)),
      // VS Code types a tool's JSON schema as `object`; the sidecar checks that it is one.
      tools: (options.tools ?? []).map((t) => ({
        name: t.name,
        description: t.description,
        inputSchema: t.inputSchema as Record<string, unknown> | undefined,
      })),
      toolMode: options.toolMode,
      modelOptions: options.modelOptions ?? {},
      // The user's choices in the model's menus in the chat input, with the schema's defaults
      // (VS Code 1.133+; typed in the chatProvider proposal). The sidecar reads them leniently.
      modelConfiguration: modelConfigurationOf(options),
      apiKey,
      ...(typeof group === 'string' ? { group } : {}),
    };
    this.streaming++;
    this.prefetch.offered(options.tools);
    try {
      const result = await this.guardedChat(params, token);
      if (typeof result === 'string') {
        progress.report(new vscode.LanguageModelTextPart(result)); // the user declined the cost
        return;
      }
      if (result.usage) {
        const entry = this.models.find((m) => m.id === model.id);
        // In the unit of the window VS Code has, which holds for Copilot's turn (rfcs/0004).
        const window = budgetWindow(model, params.modelConfiguration);
        progress.report(usageDataPart(result.usage, entry?.budgetFactor, promptScale(result, window)));
        const served = result.usage.servedModel === undefined ? undefined : this.models.find((m) => m.id === result.usage!.servedModel);
        this.hooks.onUsage(entry, result.usage, requestId, group, served); // the status bar shows real tokens
      }
    } catch (error) {
      if (token.isCancellationRequested || isCancellation(error)) return;
      const failure = fromRpcError(error);
      this.hooks.log.error(`${model.id}: ${failure.kind}: ${failure.message}`);
      if (failure.kind === 'context_overflow') void this.refresh(); // the sidecar learned the real limit
      throw failure;
    } finally {
      subscription.dispose();
      if (--this.streaming === 0) this.prefetch.idle();
    }
  }

  /** The chat, sent with the approval in force; a spend-guard refusal asks the user, and a Send
   * re-issues it with the estimate they approved (rfcs/0006-spend.md, "Approval"). Declined, it is
   * the short answer the chat shows instead: Copilot prints a thrown error, even a cancellation,
   * as "Sorry, your request failed" with a stack (seen in 1.139). */
  private async guardedChat(params: ChatParams, token: vscode.CancellationToken): Promise<ChatResult | string> {
    let sent: ChatParams = { ...params, ...this.approvals.carried(params.model, params.group ?? null) };
    // A request can pass both limits (asked twice), and today's spend can move between the
    // question and the re-send (asked again); a sidecar that keeps refusing is an error.
    for (let asked = 0; ; asked++) {
      try {
        return await this.rpc.request('gateway/chat', sent, token);
      } catch (error) {
        const refusal = this.hooks.confirmSpend && !token.isCancellationRequested && asked < MAX_SPEND_QUESTIONS ? spendLimitOf(error) : undefined;
        if (!refusal) throw error;
        this.hooks.log.info(`${params.model}: spend guard: ${refusal.message}`);
        const answer = await this.hooks.confirmSpend!(refusal);
        if (answer !== 'send' || token.isCancellationRequested) return `Not sent. ${refusal.message}`;
        sent = { ...sent, ...this.approvals.approve(refusal, params.model, params.group ?? null) };
      }
    }
  }

  // Copilot calls this thousands of times per agent iteration, one await at a time (rfcs/0004).
  // A count we know is answered at once, without reading vscode.lm.tools (VS Code builds a new
  // array on every read) or chaining promises.
  /** A count Copilot cancels rejects at once (a CancellationError), and its request to the sidecar
   * is cancelled (`$/cancelRequest`) when no other count waits for it (counts/memo.ts). */
  provideTokenCount(
    model: vscode.LanguageModelChatInformation,
    text: string | vscode.LanguageModelChatRequestMessage,
    token: vscode.CancellationToken,
  ): Thenable<number> {
    if (typeof text !== 'string') {
      return this.tokens.countMessage(model.id, text, Number(text.role), soleText(text), () => serializeMessage(text, false), token);
    }
    const known = this.tokens.known(model.id, text);
    if (known !== undefined) return Promise.resolve(known);
    // A string we have not counted: perhaps the tools changed. One read of vscode.lm.tools per miss,
    // and every tool string not yet known counted in one batch, before Copilot asks for it.
    return unlessCancelled(
      this.prefetch.learn(model.id).then(() => this.tokens.count(model.id, text, token)),
      token,
      this.tokens.cancelled,
    );
  }
}

function reportParts(parts: StreamPart[], thinking: ThinkingMode, progress: vscode.Progress<vscode.LanguageModelResponsePart>): void {
  for (const part of parts) {
    const response = toResponsePart(part, thinking);
    if (response) progress.report(response);
  }
}

/** VS Code's price fields (its languageModelPricing proposal types them; the host copies them
 * without checking proposals): credits per million tokens, and the badge (rfcs/0003, "Prices VS
 * Code shows"). */
type PriceFields = { [K in keyof HostPricing]?: NonNullable<HostPricing[K]> };

/** Fields VS Code reads beyond the stable API (its chatProvider proposal types them; the host copies
 * them without checking proposals): the model's controls in the chat input, and its prices. */
type ChatInformation = vscode.LanguageModelChatInformation &
  PriceFields & {
    configurationSchema?: { properties: Record<string, unknown> };
    isUserSelectable?: boolean;
    statusIcon?: vscode.ThemeIcon;
    /** The model's context window as a field of its own (VS Code 1.139; rfcs/0003, "The window as its
     * own field"): what the picker's hover and the context meter show, rather than input + output. */
    maxContextWindowTokens?: number;
    /** The picker's hover shows each value on a line of its own (`Object.values`), keyed as Copilot
     * keys its own (by a warning's code): a bare string would be drawn a character per line. */
    warningText?: Record<string, string>;
    /** Lines the picker's hover shows under the name whatever else it shows (VS Code 1.139 draws the
     * tooltip only for a model without prices): the gateway's metrics (rfcs/0003, "Model metrics"). */
    infoText?: Record<string, string>;
    /** Ours, not VS Code's: the tag of the provider group this entry was listed for (VS Code hands the
     * object it was given back to provideLanguageModelChatResponse and provideTokenCount). */
    group?: string;
  };

/** The window Copilot budgets the request's turn with: the model's `maxInputTokens` as VS Code has it,
 * or the context size chosen in the chat input when lower (Copilot's `AgentIntentInvocation`). */
function budgetWindow(model: vscode.LanguageModelChatInformation, configuration: Record<string, unknown> | undefined): number | undefined {
  const chosen = configuration?.contextSize;
  const window = model.maxInputTokens;
  return typeof chosen === 'number' && chosen > 0 && !(chosen >= window) ? chosen : window;
}

function modelConfigurationOf(options: vscode.ProvideLanguageModelChatResponseOptions): Record<string, unknown> {
  const configuration = (options as { modelConfiguration?: unknown }).modelConfiguration;
  return typeof configuration === 'object' && configuration !== null && !Array.isArray(configuration) ? (configuration as Record<string, unknown>) : {};
}

function toChatInformation(model: ModelEntry, shown: readonly string[]): ChatInformation {
  return {
    id: model.id,
    // The gateway's words, drawn by VS Code with icons and (the tooltip) as markdown.
    name: plain(model.name),
    family: model.family,
    version: model.version,
    // In o200k tokens, the unit Copilot counts messages in (rfcs/0004, "One budget unit"); the tooltip
    // and the status bar show real tokens.
    maxInputTokens: model.budgetInputTokens,
    maxOutputTokens: model.maxOutputTokens,
    // The gateway's window, in the unit of the usage we report against it (real tokens / budgetFactor,
    // rfcs/0004 "One budget unit"): input + output above is the budget's sum, not the window (the
    // output reservation moves it), and VS Code's context meter divides that usage by this.
    maxContextWindowTokens: Math.max(1, Math.floor(model.contextWindow / (model.budgetFactor > 0 ? model.budgetFactor : 1))),
    tooltip: plain(model.tooltip),
    detail: plain(model.detail),
    // Every model is offered to agent mode; the sidecar withholds tools from models without
    // tool support and the tooltip says so (rfcs/0003-rpc-contract.md, "Models without tools").
    capabilities: { toolCalling: true, imageInput: model.capabilities.imageInput },
    // The reasoning-effort and context-size menus beside the model in the chat input (rfcs/0007,
    // "Reasoning effort per model"; rfcs/0006, "Context tiers"); a model with neither has none.
    ...controlsOf(model.configurationSchema),
    // The Language Models editor's Pricing column and the picker's price badge.
    ...priceFieldsOf(model.hostPricing),
    // Left out of `picker.models`: still registered (a setting or a small task naming it works), not
    // offered in the picker (rfcs/0003, "The picker the user curates").
    ...(isShown(model.id, shown) ? {} : { isUserSelectable: false }),
    ...(model.warning ? { warningText: { tools: plain(model.warning) }, statusIcon: new vscode.ThemeIcon('warning') } : {}),
    ...(model.metrics?.summary ? { infoText: { metrics: plain(`${model.metrics.summary} (the gateway's last hour)`) } } : {}),
  };
}

/** The menus VS Code is given: only those the model has. VS Code reads every property as a schema
 * (`property.default`), so a null one would throw in its picker. */
function controlsOf(schema: ConfigurationSchema | null): Pick<ChatInformation, 'configurationSchema'> {
  const properties = Object.fromEntries(Object.entries(schema?.properties ?? {}).filter(([, property]) => property !== null));
  return Object.keys(properties).length > 0 ? { configurationSchema: { properties } } : {};
}

/** VS Code's price fields: a cost that is not a finite number is left out (VS Code would print
 * "null" or "NaN" in the Pricing column), as is an empty label. The sidecar sends none such. */
export function priceFieldsOf(prices: HostPricing | null): PriceFields {
  if (!prices) return {};
  const fields: PriceFields = {};
  for (const [name, value] of Object.entries(prices) as [keyof HostPricing, unknown][]) {
    if ((typeof value === 'number' && Number.isFinite(value) && value >= 0) || (typeof value === 'string' && value)) {
      Object.assign(fields, { [name]: value });
    }
  }
  return fields;
}
