// The text side of one model version: its tokenizer and chat template behind msg::text_actor.
// The supervisor spawns one beside each version's batcher and routes both to admission together,
// so the version that tokenizes a request is the version that runs it (and /v1/tokenize answers
// with the serving version's vocabulary). It runs detached (a thread of its own): tokenizing a
// long prompt stalls neither a batcher's step loop nor CAF's scheduler nor an asio thread. It is
// linked to its batcher: the two live and end together.
#pragma once

#include "messages/interfaces.hpp"
#include "model/tokenizer/chat_formatter.hpp"
#include "model/tokenizer/chat_template.hpp"
#include "model/tokenizer/tokenizer.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace caf {
class actor_system;
}

namespace bitnet::actors {

/// A version's text side, read from its model file with the tokenizer (tools/server).
struct text_options {
    /// Null: token-id prompts only (text prompts, /v1/tokenize and /v1/detokenize are refused
    /// with a 400 that says so).
    std::shared_ptr<const model::tokenizer> tokenizer;
    model::chat_template chat = model::chat_template::bitnet;
    /// chat_content_special: control tokens typed in chat messages are parsed (a trusted
    /// deployment's choice; by default message contents are text).
    bool special_in_content = false;
    /// The model's own (or the operator's) Jinja template; empty: the built-in form `chat`.
    std::optional<model::chat_formatter> formatter{};
};

/// The ids of an inference request's text or chat prompt, as `encode` answers them: BOS when
/// `p.add_bos` and the model expects one; in a raw prompt control tokens written in the text
/// parsed (as in llama.cpp's server), in a chat only the template's own markers (message
/// contents are text unless `special_in_content`). Errors name the field ("prompt" or "messages"):
/// no tokenizer, text the vocabulary cannot represent, a prompt with no tokens.
[[nodiscard]] result<std::vector<msg::token_id>> encode_prompt(const text_options& t,
                                                               const msg::text_prompt& p);
/// /apply-template: a chat prompt's text as the version's template renders it, before
/// tokenization (BOS as the template writes it). Errors name "messages".
[[nodiscard]] result<std::string> render_prompt(const text_options& t, const msg::text_prompt& p);
/// /v1/tokenize: `add_bos` as above, `parse_special` as asked. No field named.
[[nodiscard]] result<std::vector<msg::token_id>>
tokenize_text(const text_options& t, const std::string& text, bool add_bos, bool parse_special);
/// /v1/detokenize: control tokens render as nothing; invalid_argument for an id outside the
/// vocabulary.
[[nodiscard]] result<std::string> detokenize_ids(const text_options& t,
                                                 const std::vector<msg::token_id>& ids);

/// Spawns the text actor of a version, detached and linked to `batcher` (null: not linked).
[[nodiscard]] msg::text_actor spawn_text_actor(caf::actor_system& sys, text_options opt,
                                               const msg::batcher_actor& batcher);

} // namespace bitnet::actors
