// Every value that crosses an actor boundary: plain structs of std types with their CAF
// `inspect` overloads (serialisable, so an executor may live in another process). No behaviour.
#pragma once

#include "common/trace.hpp"
#include "messages/batcher_stats.hpp"
#include "messages/finish_reason.hpp"
#include "messages/ids.hpp"
#include "messages/model_inspect.hpp"
#include "model/engine/batch.hpp"
#include "model/engine/kernel_choice.hpp"
#include "model/sampling/sampling_params.hpp"

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace bitnet::msg {

/// A request's sampler settings are the model's own value type (model/sampling/
/// sampling_params.hpp), carried as they are; the API's defaults for a field a client leaves out
/// differ from the model's (which are "off"), and are these:
using sampling = model::sampling_params; ///< the same type, under the messages' name
[[nodiscard]] inline sampling api_sampling_defaults() {
    model::sampling_params p;
    p.temperature = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    return p;
}

/// A tool call an assistant message made earlier in a chat (what the client sends back).
struct chat_tool_call {
    std::string id;
    std::string name;
    std::string arguments; ///< JSON text
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, chat_tool_call& x) {
    return f(caf::meta::type_name("chat_tool_call"), x.id, x.name, x.arguments);
}

/// One chat message as the client sent it, normalised by http/ (roles system, user, assistant,
/// tool; `developer` arrives as system; text parts joined): the serving version renders it with
/// its own template.
struct chat_message {
    std::string role;
    std::string content;
    std::vector<chat_tool_call> tool_calls{}; ///< assistant: the calls it made
    std::string tool_call_id{};               ///< tool: the call it answers
    std::string name{};                       ///< tool: the function that call named
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, chat_message& x) {
    return f(caf::meta::type_name("chat_message"), x.role, x.content, x.tool_calls, x.tool_call_id,
             x.name);
}

/// How a request's prompt came: token ids, text, or chat messages.
enum class prompt_form : std::uint8_t { ids = 0, text = 1, chat = 2 };

/// A prompt still to be tokenized, by the text side of the version that will run it (its
/// tokenizer and chat template): admission hands it to that version's text actor.
struct text_prompt {
    prompt_form form = prompt_form::ids; ///< ids: nothing here, the request's `prompt` holds them
    std::string text;                    ///< form text
    std::vector<chat_message> messages;  ///< form chat: rendered with the version's template
    bool add_bos = true;                 ///< prepend BOS when the model has one and expects it
    std::string tools_json{};  ///< form chat: the tools a template may render (JSON array)
    std::string kwargs_json{}; ///< form chat: chat_template_kwargs (JSON object)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, text_prompt& x) {
    return f(caf::meta::type_name("text_prompt"), x.form, x.text, x.messages, x.add_bos,
             x.tools_json, x.kwargs_json);
}

/// Where a request's spans hang in its trace (common/trace.hpp): the trace id, the span that is
/// the parent of the next span made for it, and the W3C flags (bit 0: sampled). It travels with
/// the request to admission, the text actor, the batcher and, placed on another node, across the
/// cluster, so every node's spans join one trace. All zero: no trace.
struct trace_ref {
    std::uint64_t trace_hi = 0;
    std::uint64_t trace_lo = 0;
    std::uint64_t parent = 0;
    std::uint8_t flags = 0;

    [[nodiscard]] bool sampled() const noexcept { return (flags & 1u) != 0 && parent != 0; }
    [[nodiscard]] trace::context context() const {
        trace::context c;
        for (std::size_t i = 0; i < 8; ++i) {
            c.trace[i] = static_cast<std::uint8_t>(trace_hi >> (56 - 8 * i));
            c.trace[8 + i] = static_cast<std::uint8_t>(trace_lo >> (56 - 8 * i));
        }
        c.span = parent;
        c.flags = flags;
        return c;
    }
    [[nodiscard]] static trace_ref of(const trace::context& c) {
        trace_ref r;
        for (std::size_t i = 0; i < 8; ++i) {
            r.trace_hi = (r.trace_hi << 8) | c.trace[i];
            r.trace_lo = (r.trace_lo << 8) | c.trace[8 + i];
        }
        r.parent = c.span;
        r.flags = c.flags;
        return r;
    }
    /// The same trace, with `span` as the parent of what comes next.
    [[nodiscard]] trace_ref under(std::uint64_t span) const {
        auto r = *this;
        r.parent = span;
        return r;
    }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, trace_ref& x) {
    return f(caf::meta::type_name("trace_ref"), x.trace_hi, x.trace_lo, x.parent, x.flags);
}

/// A validated inference request as http/ hands it to admission. A text or chat prompt comes in
/// `text` and is tokenized by the version admission routes it to, before it is queued (its length
/// drives admission caps); the batcher only ever sees `prompt` (token ids).
struct generate_request {
    request_id id = 0;
    std::string model; ///< alias; empty = the default model
    std::vector<token_id> prompt;
    text_prompt text;
    /// Each token_event carries the token's piece (and its alternatives'), for logprobs.
    bool token_pieces = false;
    std::uint32_t max_tokens = 128;
    sampling params = api_sampling_defaults();
    std::vector<std::string> stop; ///< stop strings, matched on detokenized text
    std::vector<token_id> stop_token_ids;
    priority prio = priority::normal;
    std::uint32_t timeout_ms = 0;   ///< 0 = the configured default
    std::int64_t t_received_us = 0; ///< steady clock at HTTP receipt, for queue/ttft timings
    std::string client_key;         ///< the API key it came with (per-key quota); empty = none
    /// The prompt's last n_resumed tokens were generated by an earlier run of this same request
    /// (a stream resumed on another node after its own died): they are computed as they were
    /// first decoded, token events continue at index n_resumed, max_tokens counts them, the
    /// sampler continues its draws after them, and their text (already sent) is not sent again.
    std::uint32_t n_resumed = 0;
    /// The requesting node's stream relay (actors/cluster/stream_relay.hpp) when the request came
    /// from another node: the batcher sends it the request's events batched per step
    /// (stream_batch), not one message per token to the sink. Null = events go to the sink.
    caf::actor relay;
    /// echo (OpenAI completions): the batcher sends the prompt back first, as one token_event
    /// whose `echo` holds the prompt's tokens, pieces and text, before any generated token.
    bool echo = false;
    /// With echo: score every prompt token from the same forward pass (teacher forcing): its
    /// log-probability given the tokens before it, and params.n_logprobs alternatives.
    bool prompt_logprobs = false;
    /// Structured output: a JSON Schema (JSON text) the generated text must match, decoded under
    /// its mask (model/constrain/). Empty = free text. The version that runs the request
    /// compiles it before queueing; a schema it cannot enforce is a 400 naming `schema_param`.
    std::string json_schema{};
    std::string schema_param{}; ///< the request field the schema came from (response_format, tools)
    /// Tool calls the model chooses (tool_choice "auto" with tools): the functions it may call
    /// (model/constrain/tool_call_opener.hpp, auto_call_grammar_for). When the version's chat
    /// template writes calls in a syntax the server knows, the output is free text until the
    /// model writes the call opener, then decoded under the call grammar, and the call's text
    /// comes apart in token_event::call_text. Empty, or a template with no tool syntax: plain
    /// generation. Only with json_schema empty and n 1.
    std::string tool_union{};
    /// Automatic prefix caching may serve the prompt's leading KV blocks from the cache. False
    /// for requests that need every prompt position computed (prompt logprobs).
    bool reuse_prefix = true;
    /// The prefix cache's scope (http/cache_scope.hpp): 0 = shared by every request (a server
    /// without API keys); otherwise cached blocks are reused only by requests of the same scope
    /// (the same API key or key group, and the same cache_salt).
    std::uint64_t cache_scope = 0;
    /// Choices to generate from the one prompt (OpenAI `n`): the prompt is prefilled once and
    /// its KV shared (copy on write); choice i samples with seed + i. Events and completions
    /// carry the choice; the sink gets one completion per choice.
    std::uint32_t n = 1;
    /// Its trace: spans made for it are children of trace.parent (sampled ones only).
    trace_ref trace{};
    /// Speculative decoding (n-gram drafts, verified exactly: the output is the same as without).
    spec_mode speculative = spec_mode::server_default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, generate_request& x) {
    return f(caf::meta::type_name("generate_request"), x.id, x.model, x.prompt, x.text,
             x.token_pieces, x.max_tokens, x.params, x.stop, x.stop_token_ids, x.prio, x.timeout_ms,
             x.t_received_us, x.client_key, x.n_resumed, x.relay, x.echo, x.prompt_logprobs,
             x.json_schema, x.schema_param, x.tool_union, x.reuse_prefix, x.cache_scope, x.n,
             x.trace, x.speculative);
}

/// The prompt as a request with generate_request::echo gets it back (OpenAI's `echo`): its
/// tokens, the bytes each stands for, the detokenized text and where each token's text starts
/// in it; with prompt_logprobs, each token's log-probability given the ones before it (none for
/// the first token, so `logprobs` has one entry fewer than `tokens`: logprobs[i] is
/// tokens[i + 1]'s) and `n_top` alternatives per scored token, flattened (entries
/// [i * n_top, (i + 1) * n_top) belong to tokens[i + 1], most likely first).
struct prompt_echo {
    std::vector<token_id> tokens;
    std::vector<std::string> pieces;
    std::string text;
    std::vector<std::uint32_t> text_offsets;
    std::vector<float> logprobs;
    std::uint32_t n_top = 0;
    std::vector<token_id> top_tokens;
    std::vector<float> top_logprobs;
    std::vector<std::string> top_pieces;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, prompt_echo& x) {
    return f(caf::meta::type_name("prompt_echo"), x.tokens, x.pieces, x.text, x.text_offsets,
             x.logprobs, x.n_top, x.top_tokens, x.top_logprobs, x.top_pieces);
}

/// One generated token on its way to the request's sink. `text` is the newly completed UTF-8
/// piece (may be empty while a character is incomplete). The batcher decodes with the tokenizer
/// of its own version, the one that tokenized the prompt.
struct token_event {
    request_id id = 0;
    std::uint32_t index = 0;
    token_id token = 0;
    std::string text;
    float logprob = 0.0f;
    std::vector<token_id> top_tokens;
    std::vector<float> top_logprobs;
    /// With generate_request::token_pieces: the bytes `token` stands for (its vocabulary entry
    /// when it has none), and the same for each of `top_tokens`.
    std::string piece;
    std::vector<std::string> top_pieces;
    std::uint32_t prompt_tokens =
        0; ///< the prompt's length in tokens, on the first token (index 0)
    /// The alias that serves the request, on the first token: a node that routes a request
    /// without naming its model (its default is another node's) learns it here.
    std::string model;
    /// Non-empty `echo.tokens`: this event is the prompt echo of a generate_request::echo request
    /// (token -1, index 0, no text of its own), sent once before any generated token.
    prompt_echo echo;
    std::uint32_t choice = 0; ///< which of the request's n choices (generate_request::n)
    /// A request with generate_request::tool_union: the text of this token that belongs to the
    /// call the model opened (from its opener on); `text` keeps the reply's text alone.
    std::string call_text;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_event& x) {
    return f(caf::meta::type_name("token_event"), x.id, x.index, x.token, x.text, x.logprob,
             x.top_tokens, x.top_logprobs, x.piece, x.top_pieces, x.prompt_tokens, x.model, x.echo,
             x.choice, x.call_text);
}

/// The end of a request: why, how many tokens, and where the time went (microseconds).
struct completion {
    request_id id = 0;
    finish_reason finish = finish_reason::stop; ///< why it ended (each family renders its word)
    std::string model;
    std::string model_version;
    std::uint32_t prompt_tokens = 0;
    std::uint32_t completion_tokens = 0;
    std::int64_t queue_us = 0;
    std::int64_t prefill_us = 0;
    std::int64_t ttft_us = 0;
    std::int64_t decode_us = 0;
    std::int64_t total_us = 0;
    std::uint32_t choice = 0; ///< which choice ended (one completion per choice)
    /// Prompt tokens this request took from the prefix cache (its own key's scope) instead of
    /// computing them: usage.prompt_tokens_details.cached_tokens.
    std::uint32_t cached_tokens = 0;
    /// The stop string that ended the choice (finish_reason::stop by a stop string), else "".
    std::string stop_sequence;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, completion& x) {
    return f(caf::meta::type_name("completion"), x.id, x.finish, x.model, x.model_version,
             x.prompt_tokens, x.completion_tokens, x.queue_us, x.prefill_us, x.ttft_us, x.decode_us,
             x.total_us, x.choice, x.cached_tokens, x.stop_sequence);
}

/// One sequence's part of a step: the engine's chunk as it will run. `params` rides along on the
/// chunk that starts a sequence (pos0 == 0) so the executor can create its sampler;
/// `n_sampled` (tokens generated before this chunk) lets a sequence re-prefilled after a
/// preemption continue its sampler's draws rather than restart them.
struct step_chunk {
    model::seq_chunk part;
    sampling params;
    std::uint32_t n_sampled = 0;
    /// With part.all_logits: the prompt token that follows the chunk (scored from the chunk's
    /// last row), or -1 when the chunk ends the prompt (that row samples instead).
    token_id next_token = -1;
    /// The request's JSON Schema, on the chunk that starts a sequence (like `params`): the
    /// executor masks every sampled token of the sequence with it. Empty = unconstrained.
    std::string json_schema{};
    /// A lazy schema (generate_request::tool_union): json_schema applies only from the call
    /// opener on (model/constrain/tool_call_opener.hpp); empty = from the first token.
    std::string schema_opener{};
    bool opener_at_start = false;
    /// Its tenant (generate_request::client_key), on the chunk that starts a sequence with a
    /// schema: the mask worker serves tenants in turns (model/constrain/mask_worker.hpp).
    std::string tenant{};
    /// Prefix caching, on the chunk that starts a sequence (pos0 == 0): its leading whole
    /// blocks computed with prompt semantics (the executor offers them to the cache as they
    /// fill), and how many of those it may take from the cache instead (0 = no lookup).
    std::vector<token_id> prefix_tokens{};
    std::uint32_t reuse_blocks = 0;
    /// Its cache scope (generate_request::cache_scope): blocks are shared only within it.
    std::uint64_t prefix_scope = 0;
    /// n > 1: after sampling this chunk's sequence, fork its KV to each of these sequences and
    /// sample each from the same logits row with its own settings (its own seed).
    std::vector<std::uint64_t> fork_to{};
    std::vector<sampling> fork_params{};
    /// Speculative decoding: the chunk's last n_draft tokens are drafts to verify (part holds
    /// the sequence's last token, then the drafts, every row asked for). The executor samples
    /// row after row while each sample equals the next draft, keeps the KV of the drafts it
    /// accepted and drops the rest (engine::truncate).
    std::uint32_t n_draft = 0;
    /// Speculative decoding with a draft model: after this chunk's sample, the draft model
    /// proposes up to this many tokens to follow it (step_result::drafts). 0 = none.
    std::uint32_t draft_next = 0;
    /// Structured output: the sequence's sample was deferred (step_result::deferred) and is
    /// drawn now from the logits row the executor kept, once its mask is ready. part holds no
    /// token; the forward pass does not see the chunk.
    bool resume_sample = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_chunk& x) {
    return f(caf::meta::type_name("step_chunk"), x.part, x.params, x.n_sampled, x.next_token,
             x.json_schema, x.schema_opener, x.opener_at_start, x.tenant, x.prefix_tokens,
             x.reuse_blocks, x.prefix_scope, x.fork_to, x.fork_params, x.n_draft, x.draft_next,
             x.resume_sample);
}

/// A draft model's proposal for a sequence: tokens to follow its last sample, for the next step
/// to verify.
struct draft_proposal {
    std::uint64_t seq = 0;
    std::vector<token_id> tokens;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, draft_proposal& x) {
    return f(caf::meta::type_name("draft_proposal"), x.seq, x.tokens);
}

/// batcher -> executor: release these sequences' KV, then run one forward pass and sample.
struct step_batch {
    std::uint64_t step = 0;
    std::vector<std::uint64_t> release;
    std::vector<step_chunk> chunks;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_batch& x) {
    return f(caf::meta::type_name("step_batch"), x.step, x.release, x.chunks);
}

/// One sampled token per chunk that wanted logits.
struct sampled_token {
    std::uint64_t seq = 0;
    token_id token = 0;
    float logprob = 0.0f;
    std::vector<token_id> top_tokens;
    std::vector<float> top_logprobs;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sampled_token& x) {
    return f(caf::meta::type_name("sampled_token"), x.seq, x.token, x.logprob, x.top_tokens,
             x.top_logprobs);
}

/// A sequence the executor could not step for a reason of its own (a token id outside the
/// vocabulary, an engine failure that recurs when it runs alone). Its KV is already released;
/// the batcher ends it with this error while the rest of the step goes on.
struct seq_failure {
    std::uint64_t seq = 0;
    std::int32_t code = 0; ///< an errc value
    std::string message;
    std::string param; ///< the request field at fault, when one is
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, seq_failure& x) {
    return f(caf::meta::type_name("seq_failure"), x.seq, x.code, x.message, x.param);
}

/// One prompt token scored from the row of the token before it (a chunk with all_logits):
/// its position, log-probability and the top alternatives (params.n_logprobs of them).
struct prompt_score {
    std::uint64_t seq = 0;
    std::uint32_t pos = 0; ///< position of the scored token in the sequence (>= 1)
    token_id token = 0;
    float logprob = 0.0f;
    std::vector<token_id> top_tokens;
    std::vector<float> top_logprobs;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, prompt_score& x) {
    return f(caf::meta::type_name("prompt_score"), x.seq, x.pos, x.token, x.logprob, x.top_tokens,
             x.top_logprobs);
}

/// executor -> batcher: the samples of a step, the sequences that failed in it, and how long the
/// forward pass took.
struct step_result {
    std::uint64_t step = 0;
    std::vector<sampled_token> samples;
    std::int64_t step_us = 0;
    std::uint32_t kv_blocks_free = 0;
    std::vector<seq_failure> failed;
    /// Prompt tokens scored in this step (chunks with all_logits), in chunk and position order.
    std::vector<prompt_score> prompt_scores;
    /// Prompt positions taken from the prefix cache in this step, and prompt positions computed
    /// (positions below a chunk's decoded_from that the forward pass ran).
    std::uint32_t prefix_hit_tokens = 0;
    std::uint32_t prompt_tokens_computed = 0;
    /// Tokens whose greedy choice came from the engine's greedy screen (step_output::
    /// screened_rows) rather than the whole logits product.
    std::uint32_t greedy_screened_tokens = 0;
    /// Prefix caching: sequences whose cached prefix reached past their chunk (nothing of it was
    /// computed) and the length their KV now has; the policy continues them from there.
    std::vector<std::uint64_t> extended{};
    std::vector<std::uint32_t> extended_to{};
    /// The same hits per sequence (prefix_hit_tokens is their sum): a request's cached_tokens.
    std::vector<std::uint64_t> hit_seqs{};
    std::vector<std::uint32_t> hit_tokens{};
    /// The kernel families the executor's ops run ("avx512_vnni", "cuda", ...), for traces.
    std::string kernels{};
    /// Speculative decoding: the draft model's proposals for chunks with draft_next.
    std::vector<draft_proposal> drafts{};
    /// Structured output: sequences whose token mask was not ready within the step's mask
    /// budget. Their logits row is kept; the batcher plans a resume_sample chunk for each.
    std::vector<std::uint64_t> deferred{};
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_result& x) {
    return f(caf::meta::type_name("step_result"), x.step, x.samples, x.step_us, x.kv_blocks_free,
             x.failed, x.prompt_scores, x.prefix_hit_tokens, x.prompt_tokens_computed, x.extended,
             x.extended_to, x.hit_seqs, x.hit_tokens, x.kernels, x.drafts, x.deferred,
             x.greedy_screened_tokens);
}

/// What an executor holds: enough for the batcher's policy and for /v1/models and /health.
struct executor_info {
    std::string device;        ///< "cpu" or "cuda:N"
    std::string device_reason; ///< why this device (e.g. "built without CUDA")
    std::string describe;      ///< engine::describe()
    std::string architecture;
    std::uint32_t n_ctx = 0;
    std::uint32_t n_vocab = 0;
    std::uint32_t kv_block_tokens = 0;
    std::uint32_t kv_blocks_total = 0;
    std::vector<token_id> eog_ids;
    std::string format;           ///< weight format of the file: i2_s, f32, ... (GGUF file_type)
    std::uint64_t parameters = 0; ///< from the hyper-parameters (embeddings and projections)
    std::uint64_t weight_bytes = 0;
    std::uint64_t kv_pool_bytes = 0;
    std::vector<model::kernel_choice> kernels; ///< engine::kernel_choices()
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, executor_info& x) {
    return f(caf::meta::type_name("executor_info"), x.device, x.device_reason, x.describe,
             x.architecture, x.n_ctx, x.n_vocab, x.kv_block_tokens, x.kv_blocks_total, x.eog_ids,
             x.format, x.parameters, x.weight_bytes, x.kv_pool_bytes, x.kernels);
}

/// An operator's order to load a model version (POST /v1/models/load): the supervisor loads it
/// beside the alias's current version and flips the alias to it once it is ready.
struct load_order {
    std::string alias;
    std::string path;
    std::string version;         ///< empty = the first 12 hex digits of the file's SHA-256
    bool warmup = true;          ///< run a short generation and check its logits before the flip
    std::string device = "auto"; ///< auto|cpu|cuda|cuda:N|sim:N (auto: the server's devices)
    /// Speculative decoding: a draft model's GGUF (same vocabulary); empty = none.
    std::string draft_path;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, load_order& x) {
    return f(caf::meta::type_name("load_order"), x.alias, x.path, x.version, x.warmup, x.device,
             x.draft_path);
}

/// The supervisor's answer to load, rollback and unload: accepted (the new operation's id) or
/// refused, with why. A refusal never changes what is served.
struct operation_ticket {
    /// Empty = accepted; "conflict" (an operation on the alias is running: `operation_id` is
    /// its id), "not_found" (no such alias), "invalid" (e.g. nothing to roll back to).
    std::string refusal;
    std::string message;
    std::string operation_id;
    std::string alias;
    std::string version; ///< empty until known (a version id from the file's hash)
    std::string state;   ///< the operation's state when answered
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, operation_ticket& x) {
    return f(caf::meta::type_name("operation_ticket"), x.refusal, x.message, x.operation_id,
             x.alias, x.version, x.state);
}

/// The executor's warm-up: a short greedy generation straight on its engine, before any request.
struct warmup_report {
    std::uint32_t n_tokens = 0; ///< tokens generated
    std::int64_t took_us = 0;
    bool finite = false; ///< every logit of every step was finite
    std::string failure; ///< why not, when !finite
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, warmup_report& x) {
    return f(caf::meta::type_name("warmup_report"), x.n_tokens, x.took_us, x.finite, x.failure);
}

/// One loaded (or loading, or ended) version of a model alias.
struct version_status {
    std::string version;
    /// loading|validating|warming|ready|draining|standby|unloaded|failed. `standby`: drained but
    /// kept resident as the rollback target while the memory budget allows.
    std::string state;
    std::string failure;
    std::string path;
    std::string file_sha256;
    std::int64_t loaded_at = 0; ///< unix seconds it became ready; 0 = never
    executor_info info;         ///< meaningful once its executor answered (warming onwards)
    /// Times its executor moved to the next placement of its device list (a CUDA placement
    /// that failed to load or crashed; info.device_reason says the last why).
    std::uint32_t device_fallbacks = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, version_status& x) {
    return f(caf::meta::type_name("version_status"), x.version, x.state, x.failure, x.path,
             x.file_sha256, x.loaded_at, x.info, x.device_fallbacks);
}

/// One model-management operation (load, rollback, unload, or the supervisor's own
/// auto_rollback after a crash in probation) and where it stands.
struct operation_status {
    std::string id;
    std::string kind;    ///< load|rollback|unload|auto_rollback
    std::string version; ///< the version it brings in (load, rollback) or takes out (unload)
    /// running: loading|validating|warming|draining; ended: ready|unloaded|failed.
    std::string state;
    std::string failure;
    std::int64_t started_ms = 0;  ///< unix milliseconds
    std::int64_t finished_ms = 0; ///< 0 while running
    std::int64_t swap_us = 0;     ///< request to flip (load, rollback); 0 = no flip (yet)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, operation_status& x) {
    return f(caf::meta::type_name("operation_status"), x.id, x.kind, x.version, x.state, x.failure,
             x.started_ms, x.finished_ms, x.swap_us);
}

/// One model alias as the supervisor sees it, for /v1/models, /health and /metrics. The flat
/// fields describe the serving version (or, with none serving, the newest one).
struct model_status {
    std::string alias;
    std::string version;
    std::string state; ///< the serving version's state, else the newest version's
    std::string failure;
    std::string path;
    std::string previous_version; ///< the rollback target, empty when none
    std::uint32_t restarts = 0;
    std::int64_t loaded_at = 0; ///< unix seconds of the last successful load; 0 = never
    executor_info info;         ///< meaningful when ready
    std::string file_sha256;
    std::vector<version_status> versions;     ///< newest first, ended ones only the last few
    std::vector<operation_status> operations; ///< newest first, the last few
    std::uint32_t device_fallbacks = 0;       ///< of the version the flat fields describe
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, model_status& x) {
    return f(caf::meta::type_name("model_status"), x.alias, x.version, x.state, x.failure, x.path,
             x.previous_version, x.restarts, x.loaded_at, x.info, x.file_sha256, x.versions,
             x.operations, x.device_fallbacks);
}

} // namespace bitnet::msg
