// Recent Responses API replies, kept in memory per API key so that a later request can name them:
// `previous_response_id` (the conversation so far, input and output items) and `item_reference`
// items (one output item by id), as the AI SDK's default provider sends once `store` is true (its
// default); and GET /v1/responses/{id} (the response object), DELETE /v1/responses/{id} and
// GET /v1/responses/{id}/input_items. Bounded per key (config keys): how many responses, for how
// long, and their bytes, the key's oldest going first; and in all (`responses_store_total_bytes`):
// past it the key holding the most bytes gives up its oldest, so one key's flood never evicts
// another key's replies (it evicts its own). Each entry is charged a fixed overhead beside its
// text, so the byte bounds bound the count too. A key sees only what its own requests stored.
// Nothing survives a restart, and ids are random, so an id from before a restart is "not stored",
// never another reply's. Each reply remembers the replies its conversation took text from (its
// previous_response_id chain, the owners of the items it referenced): once one of them is deleted,
// the chain refuses to continue past it (a 400 naming the deleted reply), so a deleted turn's text
// never reaches a later request.
// Anthropic's message threads are kept in the same store, under the same key and bounds (a
// key's responses and threads share its count and bytes): each threaded Messages reply is one
// entry holding its thread's record (system, tools and the conversation with the reply last,
// http/anthropic/message_thread.hpp). A stored reply is continued once: a continue holds it while
// it runs (a second continue meanwhile is "in flight"), and once the continue's reply is stored
// the continued one keeps only its id ("already continued"), its record freed, so a thread holds
// one record however long it grows. A continue that ends without a stored reply lets go of it.
// The Responses routes never see a thread entry, nor a thread the Responses replies.
#pragma once

#include "http/errors.hpp"
#include "http/reply_store_limits.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace bitnet::http {

class response_store {
public:
    using clock = std::chrono::steady_clock;

    explicit response_store(response_store_limits limits);

    [[nodiscard]] bool enabled() const noexcept { return limits_.max_responses > 0; }
    [[nodiscard]] const response_store_limits& limits() const noexcept { return limits_; }

    /// Keeps response `id` of `scope`: `items` is the JSON array of its whole conversation
    /// (input items, then output items), `outputs` each output item's id and JSON text.
    void put(const std::string& scope, const std::string& id, std::string items,
             std::vector<std::pair<std::string, std::string>> outputs,
             clock::time_point now = clock::now());
    /// The same, with what GET /v1/responses/{id} answers: `response` the response object
    /// (JSON) and `input` its own input items (a JSON array, every item with an id). Their
    /// bytes count toward the bound like the rest.
    /// `continues`: the replies whose text its conversation holds (responses_expansion's).
    void put(const std::string& scope, const std::string& id, std::string items,
             std::vector<std::pair<std::string, std::string>> outputs, std::string response,
             std::string input, std::vector<std::string> continues = {},
             clock::time_point now = clock::now());

    /// A stored conversation with what it was built from.
    struct chain_of {
        std::string items;                  ///< the JSON array
        std::vector<std::string> continues; ///< the replies whose text it holds
        std::string deleted;                ///< one of them that was deleted since, or empty
    };
    /// Response `id`'s conversation and its chain, when `scope` stored it and it is kept.
    [[nodiscard]] std::optional<chain_of> chain(const std::string& scope, const std::string& id,
                                                clock::time_point now = clock::now());
    /// One output item by its id: (the id of the reply it came from, its JSON text).
    [[nodiscard]] std::optional<std::pair<std::string, std::string>>
    item_of(const std::string& scope, const std::string& id, clock::time_point now = clock::now());

    /// The conversation of response `id` (a JSON array), when `scope` stored it and it is kept.
    [[nodiscard]] std::optional<std::string> conversation(const std::string& scope,
                                                          const std::string& id,
                                                          clock::time_point now = clock::now());
    /// One output item (JSON text) by its id.
    [[nodiscard]] std::optional<std::string> item(const std::string& scope, const std::string& id,
                                                  clock::time_point now = clock::now());
    /// The response object of response `id` (JSON), when `scope` stored it with one.
    [[nodiscard]] std::optional<std::string>
    response(const std::string& scope, const std::string& id, clock::time_point now = clock::now());
    /// Its own input items (a JSON array), when `scope` stored it with them.
    [[nodiscard]] std::optional<std::string> input_items(const std::string& scope,
                                                         const std::string& id,
                                                         clock::time_point now = clock::now());
    /// Forgets response `id` of `scope` and its items; false when it was not kept.
    bool erase(const std::string& scope, const std::string& id);

    // ---- Anthropic's message threads -----------------------------------------------------

    /// Keeps threaded reply `id` of `scope` with its thread's `record` (JSON text). `previous`:
    /// the reply it continued (claimed by claim_thread), now continued: its record is freed and
    /// its id kept, to answer a later continue of it.
    void put_thread(const std::string& scope, const std::string& id, std::string record,
                    const std::string& previous = {}, clock::time_point now = clock::now());
    enum class thread_state { claimed, not_found, already_continued, in_flight };
    struct thread_claim {
        thread_state state = thread_state::not_found;
        std::string record; ///< claimed: the thread's record
        /// claimed: the hold on the reply; when its last copy goes, the reply may be continued
        /// again unless put_thread has continued it meanwhile.
        std::shared_ptr<const std::string> hold;
    };
    /// Claims threaded reply `id` of `scope` for a continue: not_found when `scope` did not store
    /// it (or it expired or was evicted), already_continued, or in_flight while another continue
    /// holds it.
    [[nodiscard]] thread_claim claim_thread(const std::string& scope, const std::string& id,
                                            clock::time_point now = clock::now());

    [[nodiscard]] std::size_t size() const;
    [[nodiscard]] std::size_t bytes() const;
    /// What `scope` holds: its responses and their bytes.
    [[nodiscard]] std::pair<std::size_t, std::size_t> held_by(const std::string& scope) const;
    /// Replies dropped for a bound (count or bytes, not age) so far.
    [[nodiscard]] std::uint64_t evictions() const;

    /// Bytes charged per stored reply beside its text (the containers that index it).
    static constexpr std::size_t entry_overhead = 256;

private:
    struct entry {
        std::string scope;
        std::string id;
        clock::time_point at;
        std::string items;
        std::string response; ///< the response object, for GET /v1/responses/{id}
        std::string input;    ///< its own input items, for .../input_items
        std::vector<std::string> item_ids;
        std::vector<std::string> continues; ///< the replies whose text `items` holds
        std::string deleted;                ///< the first of them deleted since it was kept
        std::size_t bytes = 0;
        bool thread = false;    ///< an Anthropic thread's reply (`items` its record)
        bool in_flight = false; ///< thread: a continue holds it
        bool continued = false; ///< thread: continued once (its record freed)
    };
    struct stored_item {
        std::string owner; ///< the reply it is an output of
        std::string text;
    };
    using entries = std::list<entry>;
    using key = std::pair<std::string, std::string>; ///< (scope, id)
    struct per_scope {
        std::list<entries::iterator> oldest_first;
        std::size_t bytes = 0;
    };

    /// Drops the expired, then a key past its own bounds, then past the total the key holding
    /// the most (mu_ held).
    void evict(clock::time_point now, const std::string* scope);
    void drop(entries::iterator e);
    /// Adds `e` with its output items, then evicts past the bounds (mu_ held).
    void keep(entry e, std::vector<std::pair<std::string, std::string>> outputs,
              clock::time_point now);
    /// `e` charged `bytes` instead of what it was (mu_ held).
    void recharge(entries::iterator e, std::size_t bytes);
    /// A Responses reply (not a thread's) of `scope` by id (mu_ held).
    [[nodiscard]] const entry* response_entry(const std::string& scope, const std::string& id);
    void release_thread(const std::string& scope, const std::string& id);

    response_store_limits limits_;
    mutable std::mutex mu_;
    entries order_; ///< oldest first
    std::map<key, entries::iterator> responses_;
    std::map<key, stored_item> items_;
    std::map<std::string, per_scope> scopes_;
    std::set<std::pair<std::size_t, std::string>> by_bytes_; ///< (bytes, scope) of every scope
    std::size_t bytes_ = 0;
    std::uint64_t evictions_ = 0;
};

/// A Responses request with its stored parts filled in.
struct responses_expansion {
    std::string body;        ///< the request, previous_response_id and item_reference resolved
    std::string input_items; ///< its input as a JSON array of items (what a stored reply keeps)
    /// The request's own input (item_reference resolved, without previous_response_id's
    /// conversation), each item with an id: what GET .../input_items lists.
    std::string own_input;
    bool store = false; ///< the reply is to be stored (store not false, the store enabled)
    /// The stored replies whose text it holds (the chain and the referenced items' replies).
    std::vector<std::string> continues;
};

/// The most item_reference items one request may name (each resolved is also counted against
/// the body limit before it is copied).
inline constexpr std::size_t max_item_references = 1024;

/// A request's own input items (responses_expansion::own_input) as GET .../input_items lists
/// them: each item an object with a `type` (message when it has none) and an `id` (kept, or
/// "<response id>_in<i>" with the response id's "resp_" replaced by "msg_" for a message,
/// "item_" otherwise). Not JSON (it never is: the parser read it): "[]".
[[nodiscard]] std::string stored_input_items(std::string_view own_input,
                                             const std::string& response_id);

/// A page of GET /v1/responses/{id}/input_items over `items` (stored_input_items's array):
/// OpenAI's list object {object: "list", data, first_id, last_id, has_more}, `order` "asc" or
/// "desc" (newest first, OpenAI's default), at most `limit` (1..100) items after the item `after`
/// (empty: from the start). A bad order or limit, or an `after` that names no item, is a 400
/// naming it.
[[nodiscard]] std::variant<std::string, api_error> input_items_page(const std::string& items,
                                                                    std::string_view order,
                                                                    std::string_view limit,
                                                                    std::string_view after);

/// Resolves `previous_response_id` (its conversation goes before `input`) and `item_reference`
/// items against `store` for `scope`; a name that is not stored, or a chain that continues a
/// deleted reply, is a 400 naming the field. The expanded request is bounded by `max_bytes` (the
/// body limit) as it is built: each stored part's bytes are counted before it is copied in, and
/// past the limit (or past max_item_references references) it is a 400 naming the limit, so no
/// request builds more than `max_bytes` of stored text. A body that is not a JSON object comes back
/// unchanged, for the parser to refuse.
[[nodiscard]] std::variant<responses_expansion, api_error>
expand_responses_request(std::string_view body, response_store& store, const std::string& scope,
                         std::size_t max_bytes);

} // namespace bitnet::http
