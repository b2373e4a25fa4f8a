// Jump-forward drafts: where a schema leaves one way on (an object's fixed key, the `": ` after
// it, the rest of an enum member once its prefix is unique), the bytes are known before the model
// is asked. Speculative decoding drafts them as tokens, and the verification step confirms them
// in one pass instead of one pass each. The drafts are guesses of how the model would tokenize
// those bytes; exactness comes from verification (actors/batcher/sched_spec.cpp), not from here.
#pragma once

#include "model/constrain/byte_matcher.hpp"
#include "model/constrain/token_constraint.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace bitnet::model::constrain {

/// The bytes every continuation of `m` starts with, up to `max_bytes`: stops before a byte with
/// two or more ways on, or where the value may end (complete: an end-of-generation token fits).
[[nodiscard]] std::string forced_bytes(const grammar& g, const byte_matcher& m,
                                       std::size_t max_bytes);

/// Tokens drafted for the forced bytes of `m`, appended to `out` (at most `max_tokens`): the
/// bytes split greedily into the vocabulary's longest pieces. Returns how many of the appended
/// tokens, from the first, are certain: the only token the schema allows at its position (with
/// a vocabulary of single bytes every forced byte is such a token). The rest are guesses that a
/// model tokenizes the bytes the way a longest-match split does.
std::uint32_t draft_forced_tokens(const compiled_constraint& c, const byte_matcher& m,
                                  std::uint32_t max_tokens, std::vector<std::int32_t>& out);

/// The same split for `bytes` already known to be forced from the current state (a prefix of
/// forced_bytes' answer, e.g. what is left of an earlier one as tokens take it).
std::uint32_t draft_forced_tokens(const compiled_constraint& c, std::string_view bytes,
                                  std::uint32_t max_tokens, std::vector<std::int32_t>& out);

/// Bytes looked ahead per drafted token: pieces of BPE vocabularies are rarely longer.
inline constexpr std::size_t forced_bytes_per_token = 8;

} // namespace bitnet::model::constrain
