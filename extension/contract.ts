// GENERATED FILE, DO NOT EDIT: run `make contract` after changing a model of the RPC seam.
// Source: server/gateway_lm/contract.py (the pydantic models and TypedDicts the sidecar reads and
// writes), through scripts/gen-contract.mjs and json-schema-to-typescript.

export type JsonValue = unknown;
export type StreamPart = TextPart | ThinkingPart | ToolCallPart | ReasoningItemPart | ReasoningStatePart | UsagePart | FinishPart;
export type ErrorKind =
  | 'auth'
  | 'forbidden'
  | 'not_found'
  | 'rate_limited'
  | 'context_overflow'
  | 'bad_request'
  | 'upstream'
  | 'network'
  | 'timeout'
  | 'protocol'
  | 'internal'
  | 'spend_limit'
  | 'gateway_budget'
  | 'routing_rule';
export type SpendScope = 'request' | 'day' | 'unpriced';
export type BudgetScope = 'key' | 'team' | 'project' | 'user';

export interface RpcContract {
  methods: RpcMethods;
  notifications: RpcNotifications;
  errorData: ErrorData;
  initializationOptions: ConfigureParams;
}
export interface RpcMethods {
  'gateway/models': {
    params: KeyParams;
    result: ModelsResult;
  };
  'gateway/chat': {
    params: ChatParams;
    result: ChatResult;
  };
  'gateway/countTokens': {
    params: CountParams;
    result: CountResult;
  };
  'gateway/configure': {
    params: ConfigureParams;
    result: ConfigureResult;
  };
  'gateway/credits': {
    params: KeyParams;
    result: Credits;
  };
  'gateway/usage': {
    params: UsageParams;
    result: UsageResult;
  };
}
/**
 * `gateway/models` and `gateway/credits`: the key to ask with (None: the sidecar's own).
 */
export interface KeyParams {
  apiKey?: string | null;
}
export interface ModelsResult {
  models: ModelEntry[];
}
/**
 * One model of `gateway/models`: the catalogue's fields (real tokens), what the picker shows of
 * it, and the window Copilot budgets with, in o200k tokens (budget.py).
 */
export interface ModelEntry {
  id: string;
  name: string;
  family: string;
  version: string;
  contextWindow: number;
  maxInputTokens: number;
  maxOutputTokens: number;
  capabilities: Capabilities;
  reasoning: boolean;
  pricing: Pricing;
  tags: string[];
  ownedBy: string;
  description: string;
  fastTierOf: string | null;
  tooltip: string;
  detail: string;
  budgetFactor: number;
  budgetInputTokens: number;
  tokenizer: string;
  configurationSchema: ConfigurationSchema | null;
  hostPricing: HostPricing | null;
  warning: string | null;
  metrics: ModelMetrics | null;
}
export interface Capabilities {
  toolCalling: boolean;
  imageInput: boolean;
}
/**
 * USD per million tokens; None where the gateway gives no price. The base prices are those of
 * a request below the first tier; `tiers` (ascending, each above the last) those of longer ones.
 */
export interface Pricing {
  input: number | null;
  output: number | null;
  cacheRead: number | null;
  cacheWrite: number | null;
  tiers: PriceTier[];
}
/**
 * The prices of a request whose input reaches `fromInputTokens`: the gateway bills every token of
 * such a request at these rates (long-context pricing, rfcs/0006 "Context tiers"). USD per million
 * tokens; a price the tier does not change is the base price.
 */
export interface PriceTier {
  fromInputTokens: number;
  input: number | null;
  output: number | null;
  cacheRead: number | null;
  cacheWrite: number | null;
}
/**
 * `LanguageModelChatInformation.configurationSchema`: per-model controls in the chat input.
 * The user's choices come back in the request's `modelConfiguration`.
 */
export interface ConfigurationSchema {
  properties: ConfigurationProperties;
}
/**
 * The model's controls in the chat input; each is left out of the wire where the model has none
 * (effort.py, speed.py, contextsize.py).
 */
export interface ConfigurationProperties {
  reasoningEffort?: EffortProperty | null;
  speed?: SpeedProperty | null;
  contextSize?: ContextSizeProperty | null;
}
/**
 * The chat input's menu for one model: a JSON Schema property as VS Code reads it
 * (`enumItemLabels`, `enumDescriptions` and `group: 'navigation'` are VS Code's).
 */
export interface EffortProperty {
  type: 'string';
  title: string;
  description: string;
  enum: ('default' | 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh')[];
  enumItemLabels: string[];
  enumDescriptions: string[];
  default: 'default' | 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';
  group: 'navigation';
}
/**
 * The chat input's speed menu for one model: a JSON Schema property as VS Code reads it (the
 * same shape as effort.EffortProperty).
 */
export interface SpeedProperty {
  type: 'string';
  title: string;
  description: string;
  enum: ('standard' | 'fast' | 'flex' | 'priority' | 'ultrafast')[];
  enumItemLabels: string[];
  enumDescriptions: string[];
  default: 'standard' | 'fast' | 'flex' | 'priority' | 'ultrafast';
  group: 'navigation';
}
/**
 * The chat input's context-size menu: a JSON Schema property as VS Code reads it (`group:
 * 'tokens'` puts it beside the context meter, where VS Code's own providers put theirs).
 */
export interface ContextSizeProperty {
  type: 'number';
  title: string;
  description: string;
  enum: number[];
  enumItemLabels: string[];
  enumDescriptions: string[];
  default: number;
  group: 'tokens';
}
/**
 * VS Code's price fields on a model's information (`LanguageModelChatInformation`, its
 * languageModelPricing proposal; the host copies them without checking proposals). Costs in
 * credits per million tokens; a None field is left out (extension/provider.ts).
 */
export interface HostPricing {
  pricing: string;
  inputCost: number | null;
  outputCost: number | null;
  cacheCost: number | null;
  cacheWriteCost: number | null;
  longContextInputCost: number | null;
  longContextOutputCost: number | null;
  longContextCacheCost: number | null;
  longContextCacheWriteCost: number | null;
  priceCategory: ('low' | 'medium' | 'high' | 'very_high') | null;
}
/**
 * A model's metrics as the picker shows them: those of the provider that served the most of its
 * requests in the last hour (most samples; the gateway's likeliest route), rounded as shown.
 * None where the gateway measured nothing.
 */
export interface ModelMetrics {
  provider: string | null;
  providers: number;
  firstTokenMs: number | null;
  firstTokenP95Ms: number | null;
  tokensPerSecond: number | null;
  uptimePercent: number | null;
  summary: string;
}
export interface ChatParams {
  model: string;
  messages: MessageIn[];
  tools?: ToolIn[];
  toolMode?: number;
  modelOptions?: {
    [k: string]: unknown;
  };
  modelConfiguration?: {
    [k: string]: unknown;
  };
  requestId: string | number;
  apiKey?: string | null;
  group?: string | null;
  approvedCost?: number | null;
  approvedDay?: boolean;
  approvedUnpriced?: boolean;
}
export interface MessageIn {
  role: number;
  name?: string | null;
  content?: (TextIn | ToolCallIn | ToolResultIn | DataIn | ThinkingIn)[];
}
export interface TextIn {
  type: 'text';
  value: string;
}
export interface ToolCallIn {
  type: 'toolCall';
  callId: string;
  name: string;
  input?: unknown;
}
export interface ToolResultIn {
  type: 'toolResult';
  callId: string;
  content?: (TextIn | DataIn | ThinkingIn | ToolCallIn)[];
}
export interface DataIn {
  type: 'data';
  mimeType: string;
  data: string;
}
export interface ThinkingIn {
  type: 'thinking';
  value?: string | string[];
  id?: string | null;
  state?: ReasoningStateIn | null;
  tagged?: string | null;
}
/**
 * What a `reasoningState` part carried, back from the history: the model that reasoned.
 */
export interface ReasoningStateIn {
  model: string;
  /**
   * @maxItems 64
   */
  items: ReasoningItemIn[];
}
/**
 * A reasoning item as the extension hands it back (`ReasoningItem`, read as untrusted).
 */
export interface ReasoningItemIn {
  id: string;
  encryptedContent: string;
  /**
   * @maxItems 32
   */
  summary?: string[];
  before?: string | null;
}
export interface ToolIn {
  name: string;
  description?: string;
  inputSchema?: {
    [k: string]: unknown;
  } | null;
}
export interface ChatResult {
  usage: UsagePart | null;
  finishReason: ('stop' | 'length' | 'toolCalls' | 'contentFilter' | 'refusal') | null;
  responseId: string | null;
  inputLimit: number | null;
  budgetFactor: number | null;
}
/**
 * The terminal response's usage (stream/usage.py): cached and cache-write tokens are input
 * tokens read from and written to the prompt cache; reasoning tokens are output tokens.
 */
export interface UsagePart {
  type: 'usage';
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  cachedTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  servedModel?: string;
  servedTier: 'default' | 'flex' | 'priority' | 'ultrafast';
}
export interface CountParams {
  model: string;
  texts: (string | MessageIn)[];
  background?: boolean;
}
export interface CountResult {
  counts: number[];
}
export interface ConfigureParams {
  settings?: Settings;
  baseUrl?: string | null;
}
/**
 * User settings that shape requests and transport. Names match the extension's settings
 * (SETTING_IDS maps each to its id). Each is validated on its own: `updated_settings`.
 */
export interface Settings {
  baseUrl?: string;
  reasoningEffort?: ('default' | 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh') | null;
  reasoningEffortByModel?: {
    [k: string]: 'default' | 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';
  };
  gatewayOrder?: string[];
  gatewayOnly?: string[];
  gatewayModels?: string[];
  maxOutputTokens?: number | null;
  outputReservation?: number;
  connectTimeout?: number;
  idleTimeout?: number;
  requestTimeout?: number;
  maxRetries?: number;
  caBundle?: string | null;
  proxy?: string | null;
  proxyStrictSSL?: boolean;
  noProxy?: string[];
  proxyAuthorization?: string | null;
  systemCertificates?: boolean;
  modelOptions?: {
    [k: string]: ModelOptions;
  };
  logLevel?: string;
  stateDir?: string | null;
  maxRequestCost?: number | null;
  maxDailyCost?: number | null;
  usageRetentionDays?: number;
  gatewaySort?: 'default' | 'cost' | 'tps' | 'ttft';
  zeroDataRetention?: boolean;
  disallowPromptTraining?: boolean;
  serviceTier?: 'default' | 'flex' | 'priority';
  caching?: 'auto' | 'off';
  attributionUser?: string | null;
  attributionTags?: string[];
  tagWorkspace?: boolean;
  virtualModels?: string[];
}
/**
 * What one pattern of `vercelAiGateway.modelOptions` may set.
 */
export interface ModelOptions {
  temperature?: number | null;
  top_p?: number | null;
  maxOutputTokens?: number | null;
  reasoningEffort?: ('default' | 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh') | null;
  speed?: ('standard' | 'fast') | null;
  extraBody?: {
    [k: string]: JsonValue;
  };
  extraHeaders?: {
    [k: string]: string;
  };
}
export interface ConfigureResult {
  ok: true;
}
/**
 * USD; both None when the key cannot read the team's credits.
 */
export interface Credits {
  balance: number | null;
  totalUsed: number | null;
}
export interface UsageParams {
  since?: string | null;
  until?: string | null;
  limit?: number;
}
export interface UsageResult {
  records: UsageRecord[];
  dayTotal: number | null;
  problem: string | null;
}
/**
 * One request's usage: the billed cost when the gateway's lookup answered, else the estimate.
 * Every field has its bound (usage.py), here for the contract, which carries them to the extension.
 */
export interface UsageRecord {
  id: string;
  time: string;
  model: string;
  provider: string | null;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  cost: number | null;
  billed: boolean;
  byok: boolean | null;
  group: string | null;
  requestedModel: string | null;
  cacheSaved: number | null;
}
export interface RpcNotifications {
  'gateway/parts': PartsNotification;
  'gateway/calibration': Calibration;
  'gateway/metrics': MetricsNotification;
  'gateway/billed': BilledNotification;
}
export interface PartsNotification {
  requestId: string | number;
  parts: StreamPart[];
}
export interface TextPart {
  type: 'text';
  value: string;
}
export interface ThinkingPart {
  type: 'thinking';
  value: string;
  id: string | null;
}
export interface ToolCallPart {
  type: 'toolCall';
  callId: string;
  name: string;
  input: {
    [k: string]: unknown;
  };
}
/**
 * One reasoning item, as soon as it is done, for a host that keeps only what a Responses item
 * carries (the Copilot harness's bridge, rfcs/0002 "The reasoning round trip"): the extension
 * reports it as a thinking part whose `encrypted_content` metadata is `tagged`. Opaque, never shown.
 */
export interface ReasoningItemPart {
  type: 'reasoningItem';
  id: string;
  tagged: string;
}
/**
 * The encrypted reasoning of a response, for the model's next turn (rfcs/0002, "The reasoning
 * round trip"). Opaque: never shown; the extension hands it to VS Code as thinking metadata, which
 * comes back in the history as `ThinkingIn.state`.
 */
export interface ReasoningStatePart {
  type: 'reasoningState';
  model: string;
  items: ReasoningItem[];
}
export interface ReasoningItem {
  id: string;
  encryptedContent: string;
  summary: string[];
  before: string | null;
}
export interface FinishPart {
  type: 'finish';
  reason: 'stop' | 'length' | 'toolCalls' | 'contentFilter' | 'refusal';
  responseId: string | null;
}
/**
 * A model's learned factor moved the window Copilot budgets with (rfcs/0004-token-accounting.md):
 * the model list has changed, and the extension fetches it again.
 */
export interface Calibration {
  model: string;
  factor: number;
}
/**
 * The models' metrics (offer/metrics.py) came, changed or went (rfcs/0003, "Model metrics"):
 * the model list carries them, and the extension fetches it again.
 */
export interface MetricsNotification {
  models: number;
}
/**
 * Sent once per chat, after its result: the billed record, or the estimate when the lookup gave up.
 */
export interface BilledNotification {
  requestId: string | number;
  record: UsageRecord;
}
/**
 * The `data` of every JSON-RPC error the sidecar answers (rfcs/0003-rpc-contract.md).
 */
export interface ErrorData {
  kind: ErrorKind;
  status: number | null;
  retryAfter: number | null;
  settings?: string[];
  estimate?: number | null;
  limit?: number;
  scope?: SpendScope;
  spentToday?: number | null;
  budget?: BudgetScope | null;
}

/** Every ErrorKind, for checking a kind read off the wire. */
export const ERROR_KINDS: readonly ErrorKind[] = [
  'auth',
  'forbidden',
  'not_found',
  'rate_limited',
  'context_overflow',
  'bad_request',
  'upstream',
  'network',
  'timeout',
  'protocol',
  'internal',
  'spend_limit',
  'gateway_budget',
  'routing_rule',
];

/** server/gateway_lm/contract.py's CONSTANTS: the sidecar's bounds and secret words, applied here too. */
export const GROUP_PATTERN = '^[A-Za-z0-9_-]+$';
export const MAX_GROUP = 64;
export const MAX_ID = 200;
export const MAX_MODEL_ID = 200;
export const MAX_PROVIDER = 100;
export const MAX_TIME = 40;
export const MAX_TOKEN_COUNT = 1099511627776;
export const MAX_USD = 1000000000;
export const MAX_VIRTUAL_MODELS = 20;
export const SAFE_ID_PATTERN = '^[A-Za-z0-9._~:/@+-]+$';
export const SECRET_WORDS = ['apikey', 'secret', 'token', 'password', 'passwd', 'credential', 'privatekey', 'accesskey', 'auth'] as const;
export const SETTING_IDS = {
  baseUrl: 'vercelAiGateway.baseUrl',
  reasoningEffort: 'vercelAiGateway.reasoningEffort',
  reasoningEffortByModel: 'vercelAiGateway.reasoningEffortByModel',
  gatewayOrder: 'vercelAiGateway.routing.order',
  gatewayOnly: 'vercelAiGateway.routing.only',
  gatewayModels: 'vercelAiGateway.routing.fallbackModels',
  maxOutputTokens: 'vercelAiGateway.maxOutputTokens',
  outputReservation: 'vercelAiGateway.outputReservation',
  connectTimeout: 'vercelAiGateway.connectTimeout',
  idleTimeout: 'vercelAiGateway.idleTimeout',
  requestTimeout: 'vercelAiGateway.requestTimeout',
  maxRetries: 'vercelAiGateway.maxRetries',
  caBundle: 'vercelAiGateway.caBundle',
  proxy: 'http.proxy',
  proxyStrictSSL: 'http.proxyStrictSSL',
  noProxy: 'http.noProxy',
  proxyAuthorization: 'http.proxyAuthorization',
  systemCertificates: 'http.systemCertificates',
  modelOptions: 'vercelAiGateway.modelOptions',
  logLevel: 'vercelAiGateway.logLevel',
  maxRequestCost: 'vercelAiGateway.spend.maxRequestCost',
  maxDailyCost: 'vercelAiGateway.spend.maxDailyCost',
  usageRetentionDays: 'vercelAiGateway.usage.retentionDays',
  gatewaySort: 'vercelAiGateway.routing.sort',
  zeroDataRetention: 'vercelAiGateway.routing.zeroDataRetention',
  disallowPromptTraining: 'vercelAiGateway.routing.disallowPromptTraining',
  serviceTier: 'vercelAiGateway.routing.serviceTier',
  caching: 'vercelAiGateway.routing.caching',
  attributionUser: 'vercelAiGateway.attribution.user',
  attributionTags: 'vercelAiGateway.attribution.tags',
  tagWorkspace: 'vercelAiGateway.attribution.tagWorkspace',
  virtualModels: 'vercelAiGateway.virtualModels',
} as const;
export const UNPRICED_TIERS = ['priority', 'ultrafast'] as const;
export const VIRTUAL_ID_PATTERN = '^vmc/[A-Za-z0-9][A-Za-z0-9._-]{0,99}$';
