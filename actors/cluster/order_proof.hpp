// Proofs that a cluster-wide model operation was ordered with an admin key (messages/cluster.hpp,
// node_order): HMAC-SHA256 under the key over every field of the order that says what it does and
// to whom. The key itself never leaves the node the HTTP request reached; a peer that relays or
// receives an order learns a proof for that one order, target and minute, nothing it can reuse.
#pragma once

#include "messages/cluster.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace bitnet::actors {

/// The proof of `o` (its `proof` field left out) under `key`, in lowercase hex.
[[nodiscard]] std::string order_proof(const std::string& key, const msg::node_order& o);

/// Why node `self` must refuse `o` (empty: it may run it). `admin_keys` and `admin_open` are the
/// node's own admin settings: with keys, one of them must give o's proof; with none, only
/// admin_open lets peers order (as it lets any HTTP client); `now_ms` is the node's Unix clock.
[[nodiscard]] std::string order_refusal(const msg::node_order& o, const std::string& self,
                                        const std::vector<std::string>& admin_keys, bool admin_open,
                                        std::int64_t now_ms);

} // namespace bitnet::actors
