// Every value that crosses an actor boundary: plain structs of std types with their CAF
// `inspect` overloads (serialisable, so an executor may live in another process). No behaviour.
#pragma once

#include "messages/ids.hpp"
#include "model/engine/batch.hpp"
#include "model/engine/kernel_choice.hpp"
#include "model/sampling/sampling_params.hpp"

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

} // namespace bitnet::msg

// The CAF inspect overloads of the model's value types live in their namespace (CAF finds them
// by argument-dependent lookup) but here, in messages/: model/ knows nothing of CAF.
namespace bitnet::model {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sampling_params& x) {
    return f(caf::meta::type_name("sampling_params"), x.temperature, x.top_k, x.top_p, x.min_p,
             x.repetition_penalty, x.repeat_last_n, x.seed, x.n_logprobs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, seq_chunk& x) {
    return f(caf::meta::type_name("seq_chunk"), x.seq, x.tokens, x.pos0, x.want_logits,
             x.decoded_from);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, family_timing& x) {
    return f(caf::meta::type_name("family_timing"), x.family, x.micros);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kernel_choice& x) {
    return f(caf::meta::type_name("kernel_choice"), x.op, x.family, x.source, x.tokens, x.timings);
}

} // namespace bitnet::model

namespace bitnet::msg {

/// One chat message as the client sent it (role: system, user or assistant).
struct chat_message {
    std::string role;
    std::string content;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, chat_message& x) {
    return f(caf::meta::type_name("chat_message"), x.role, x.content);
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
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, text_prompt& x) {
    return f(caf::meta::type_name("text_prompt"), x.form, x.text, x.messages, x.add_bos);
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
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, generate_request& x) {
    return f(caf::meta::type_name("generate_request"), x.id, x.model, x.prompt, x.text,
             x.token_pieces, x.max_tokens, x.params, x.stop, x.stop_token_ids, x.prio, x.timeout_ms,
             x.t_received_us, x.client_key);
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
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_event& x) {
    return f(caf::meta::type_name("token_event"), x.id, x.index, x.token, x.text, x.logprob,
             x.top_tokens, x.top_logprobs, x.piece, x.top_pieces, x.prompt_tokens);
}

/// The end of a request: why, how many tokens, and where the time went (microseconds).
struct completion {
    request_id id = 0;
    std::string finish_reason; ///< stop|length|eos|cancelled|deadline (HTTP-API.md)
    std::string model;
    std::string model_version;
    std::uint32_t prompt_tokens = 0;
    std::uint32_t completion_tokens = 0;
    std::int64_t queue_us = 0;
    std::int64_t prefill_us = 0;
    std::int64_t ttft_us = 0;
    std::int64_t decode_us = 0;
    std::int64_t total_us = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, completion& x) {
    return f(caf::meta::type_name("completion"), x.id, x.finish_reason, x.model, x.model_version,
             x.prompt_tokens, x.completion_tokens, x.queue_us, x.prefill_us, x.ttft_us, x.decode_us,
             x.total_us);
}

/// One sequence's part of a step: the engine's chunk as it will run. `params` rides along on the
/// chunk that starts a sequence (pos0 == 0) so the executor can create its sampler;
/// `n_sampled` (tokens generated before this chunk) lets a sequence re-prefilled after a
/// preemption continue its sampler's draws rather than restart them.
struct step_chunk {
    model::seq_chunk part;
    sampling params;
    std::uint32_t n_sampled = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_chunk& x) {
    return f(caf::meta::type_name("step_chunk"), x.part, x.params, x.n_sampled);
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

/// executor -> batcher: the samples of a step, the sequences that failed in it, and how long the
/// forward pass took.
struct step_result {
    std::uint64_t step = 0;
    std::vector<sampled_token> samples;
    std::int64_t step_us = 0;
    std::uint32_t kv_blocks_free = 0;
    std::vector<seq_failure> failed;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_result& x) {
    return f(caf::meta::type_name("step_result"), x.step, x.samples, x.step_us, x.kv_blocks_free,
             x.failed);
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
    std::string device = "auto"; ///< auto|cpu|cuda
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, load_order& x) {
    return f(caf::meta::type_name("load_order"), x.alias, x.path, x.version, x.warmup, x.device);
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
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, version_status& x) {
    return f(caf::meta::type_name("version_status"), x.version, x.state, x.failure, x.path,
             x.file_sha256, x.loaded_at, x.info);
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
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, model_status& x) {
    return f(caf::meta::type_name("model_status"), x.alias, x.version, x.state, x.failure, x.path,
             x.previous_version, x.restarts, x.loaded_at, x.info, x.file_sha256, x.versions,
             x.operations);
}

/// One model's queue and batch state, for /v1/stats, /metrics and Retry-After.
struct batcher_stats {
    std::string model;
    std::array<std::uint32_t, 3> waiting{}; ///< by priority: high, normal, low
    std::uint64_t waiting_prompt_tokens = 0;
    std::uint32_t running = 0;
    std::uint32_t kv_blocks_used = 0;
    std::uint32_t kv_blocks_total = 0;
    std::uint64_t steps = 0;
    std::uint64_t preemptions = 0;
    std::uint64_t finished = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batcher_stats& x) {
    return f(caf::meta::type_name("batcher_stats"), x.model, x.waiting, x.waiting_prompt_tokens,
             x.running, x.kv_blocks_used, x.kv_blocks_total, x.steps, x.preemptions, x.finished);
}

} // namespace bitnet::msg
