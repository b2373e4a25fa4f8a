#include "http/responses/response_store.hpp"

#include "http/api_json.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <optional>

namespace bitnet::http {

namespace json = boost::json;

response_store::response_store(response_store_limits limits)
    : limits_(limits) {}

void response_store::put(const std::string& scope, const std::string& id, std::string items,
                         std::vector<std::pair<std::string, std::string>> outputs,
                         clock::time_point now) {
    put(scope, id, std::move(items), std::move(outputs), {}, {}, {}, now);
}

void response_store::put(const std::string& scope, const std::string& id, std::string items,
                         std::vector<std::pair<std::string, std::string>> outputs,
                         std::string response, std::string input,
                         std::vector<std::string> continues, clock::time_point now) {
    if (!enabled())
        return;
    entry e;
    e.scope = scope;
    e.id = id;
    e.at = now;
    e.bytes =
        entry_overhead + scope.size() + id.size() + items.size() + response.size() + input.size();
    for (const auto& [item_id, text] : outputs)
        e.bytes += item_id.size() + text.size();
    if (e.bytes > limits_.max_bytes || e.bytes > limits_.total_bytes)
        return; // it alone would not fit: not kept (a later name of it is a 400)
    e.items = std::move(items);
    e.response = std::move(response);
    e.input = std::move(input);
    e.continues = std::move(continues);
    std::lock_guard lock(mu_);
    keep(std::move(e), std::move(outputs), now);
}

void response_store::keep(entry e, std::vector<std::pair<std::string, std::string>> outputs,
                          clock::time_point now) {
    const std::string scope = e.scope;
    const std::string id = e.id;
    if (auto it = responses_.find({scope, id}); it != responses_.end())
        drop(it->second); // ids are unique per process; kept simple if not
    for (auto& [item_id, text] : outputs) {
        e.item_ids.push_back(item_id);
        items_[{scope, item_id}] = stored_item{id, std::move(text)};
    }
    bytes_ += e.bytes;
    auto& ps = scopes_[scope];
    by_bytes_.erase({ps.bytes, scope});
    ps.bytes += e.bytes;
    by_bytes_.insert({ps.bytes, scope});
    order_.push_back(std::move(e));
    const auto at = std::prev(order_.end());
    ps.oldest_first.push_back(at);
    responses_[{scope, id}] = at;
    evict(now, &scope);
}

void response_store::drop(entries::iterator e) {
    responses_.erase({e->scope, e->id});
    for (const auto& item_id : e->item_ids)
        items_.erase({e->scope, item_id});
    bytes_ -= e->bytes;
    auto ps = scopes_.find(e->scope);
    by_bytes_.erase({ps->second.bytes, e->scope});
    ps->second.bytes -= e->bytes;
    ps->second.oldest_first.remove(e);
    if (ps->second.oldest_first.empty())
        scopes_.erase(ps);
    else
        by_bytes_.insert({ps->second.bytes, e->scope});
    order_.erase(e);
}

void response_store::recharge(entries::iterator e, std::size_t bytes) {
    auto& ps = scopes_.at(e->scope);
    by_bytes_.erase({ps.bytes, e->scope});
    ps.bytes = ps.bytes - e->bytes + bytes;
    by_bytes_.insert({ps.bytes, e->scope});
    bytes_ = bytes_ - e->bytes + bytes;
    e->bytes = bytes;
}

void response_store::put_thread(const std::string& scope, const std::string& id, std::string record,
                                const std::string& previous, clock::time_point now) {
    if (!enabled())
        return;
    entry e;
    e.scope = scope;
    e.id = id;
    e.at = now;
    e.thread = true;
    e.bytes = entry_overhead + scope.size() + id.size() + record.size();
    e.items = std::move(record);
    std::lock_guard lock(mu_);
    if (const auto it = responses_.find({scope, previous});
        !previous.empty() && it != responses_.end() && it->second->thread) {
        // Continued: its whole conversation is in the new record, so only its id stays.
        auto p = it->second;
        p->continued = true;
        p->in_flight = false;
        std::string().swap(p->items);
        recharge(p, entry_overhead + p->scope.size() + p->id.size());
    }
    if (e.bytes > limits_.max_bytes || e.bytes > limits_.total_bytes)
        return; // it alone would not fit: not kept (a continue of it is thread_not_found)
    keep(std::move(e), {}, now);
}

response_store::thread_claim response_store::claim_thread(const std::string& scope,
                                                          const std::string& id,
                                                          clock::time_point now) {
    thread_claim out;
    {
        std::lock_guard lock(mu_);
        evict(now, nullptr);
        const auto it = responses_.find({scope, id});
        if (it == responses_.end() || !it->second->thread)
            return out;
        auto& e = *it->second;
        if (e.continued || e.in_flight) {
            out.state = e.continued ? thread_state::already_continued : thread_state::in_flight;
            return out;
        }
        e.in_flight = true;
        out.state = thread_state::claimed;
        out.record = e.items;
    }
    // Made outside the lock: its deleter takes it.
    out.hold = std::shared_ptr<const std::string>(new std::string(id),
                                                  [this, scope](const std::string* held) {
                                                      release_thread(scope, *held);
                                                      delete held;
                                                  });
    return out;
}

void response_store::release_thread(const std::string& scope, const std::string& id) {
    std::lock_guard lock(mu_);
    if (const auto it = responses_.find({scope, id}); it != responses_.end())
        it->second->in_flight = false;
}

const response_store::entry* response_store::response_entry(const std::string& scope,
                                                            const std::string& id) {
    const auto it = responses_.find({scope, id});
    return it == responses_.end() || it->second->thread ? nullptr : &*it->second;
}

void response_store::evict(clock::time_point now, const std::string* scope) {
    while (!order_.empty() && now - order_.front().at > limits_.ttl)
        drop(order_.begin());
    if (scope != nullptr)
        for (auto ps = scopes_.find(*scope);
             ps != scopes_.end() && (ps->second.oldest_first.size() > limits_.max_responses ||
                                     ps->second.bytes > limits_.max_bytes);
             ps = scopes_.find(*scope)) {
            drop(ps->second.oldest_first.front());
            ++evictions_;
        }
    while (bytes_ > limits_.total_bytes && !by_bytes_.empty()) {
        // The key holding the most gives up its oldest: a key below it is never touched.
        const auto& biggest = std::prev(by_bytes_.end())->second;
        drop(scopes_.at(biggest).oldest_first.front());
        ++evictions_;
    }
}

std::optional<std::string> response_store::conversation(const std::string& scope,
                                                        const std::string& id,
                                                        clock::time_point now) {
    std::lock_guard lock(mu_);
    evict(now, nullptr);
    const auto* e = response_entry(scope, id);
    if (!e)
        return std::nullopt;
    return e->items;
}

std::optional<response_store::chain_of>
response_store::chain(const std::string& scope, const std::string& id, clock::time_point now) {
    std::lock_guard lock(mu_);
    evict(now, nullptr);
    const auto* e = response_entry(scope, id);
    if (!e)
        return std::nullopt;
    return chain_of{e->items, e->continues, e->deleted};
}

std::optional<std::string> response_store::item(const std::string& scope, const std::string& id,
                                                clock::time_point now) {
    auto found = item_of(scope, id, now);
    if (!found)
        return std::nullopt;
    return std::move(found->second);
}

std::optional<std::pair<std::string, std::string>>
response_store::item_of(const std::string& scope, const std::string& id, clock::time_point now) {
    std::lock_guard lock(mu_);
    evict(now, nullptr);
    const auto it = items_.find({scope, id});
    if (it == items_.end())
        return std::nullopt;
    return std::pair{it->second.owner, it->second.text};
}

std::optional<std::string> response_store::response(const std::string& scope, const std::string& id,
                                                    clock::time_point now) {
    std::lock_guard lock(mu_);
    evict(now, nullptr);
    const auto* e = response_entry(scope, id);
    if (!e || e->response.empty())
        return std::nullopt;
    return e->response;
}

std::optional<std::string> response_store::input_items(const std::string& scope,
                                                       const std::string& id,
                                                       clock::time_point now) {
    std::lock_guard lock(mu_);
    evict(now, nullptr);
    const auto* e = response_entry(scope, id);
    if (!e || e->input.empty())
        return std::nullopt;
    return e->input;
}

bool response_store::erase(const std::string& scope, const std::string& id) {
    std::lock_guard lock(mu_);
    const auto it = responses_.find({scope, id});
    if (it == responses_.end() || it->second->thread)
        return false;
    drop(it->second); // its items, its bytes and its key's share with it
    // Every later reply of the key that holds its text can no longer be continued.
    if (const auto ps = scopes_.find(scope); ps != scopes_.end())
        for (const auto e : ps->second.oldest_first)
            if (e->deleted.empty() &&
                std::find(e->continues.begin(), e->continues.end(), id) != e->continues.end())
                e->deleted = id;
    return true;
}

std::size_t response_store::size() const {
    std::lock_guard lock(mu_);
    return order_.size();
}

std::size_t response_store::bytes() const {
    std::lock_guard lock(mu_);
    return bytes_;
}

std::pair<std::size_t, std::size_t> response_store::held_by(const std::string& scope) const {
    std::lock_guard lock(mu_);
    const auto it = scopes_.find(scope);
    if (it == scopes_.end())
        return {0, 0};
    return {it->second.oldest_first.size(), it->second.bytes};
}

std::uint64_t response_store::evictions() const {
    std::lock_guard lock(mu_);
    return evictions_;
}

namespace {

api_error not_stored(const std::string& param, const std::string& what,
                     const response_store& store) {
    api_error e = invalid_value(param, what);
    e.suggestion = store.enabled()
                       ? "replies are kept " + std::to_string(store.limits().ttl.count()) +
                             " s (the newest " + std::to_string(store.limits().max_responses) +
                             "), for the API key that made them: send the items themselves"
                       : "this server stores no replies (responses_store_max 0): send the whole "
                         "conversation in input";
    return e;
}

/// The size of an expansion as it is built: the body as sent, then each stored part's bytes
/// counted before it is copied in, so that nothing past the body limit is ever built.
struct expansion_budget {
    std::size_t bytes = 0;
    std::size_t max_bytes = 0;

    [[nodiscard]] std::optional<api_error> add(std::size_t n, const std::string& param,
                                               const std::string& where = {}) {
        bytes += n;
        if (bytes <= max_bytes)
            return std::nullopt;
        auto e = invalid_value(param,
                               where + "the request with its stored items comes to more than " +
                                   std::to_string(max_bytes) + " bytes, past the " +
                                   std::to_string(max_bytes) + "-byte body limit (max_body_bytes)");
        e.suggestion = "start a new conversation, or send fewer items";
        return e;
    }
};

void note_continued(responses_expansion& out, const std::string& id) {
    if (std::find(out.continues.begin(), out.continues.end(), id) == out.continues.end())
        out.continues.push_back(id);
}

/// previous_response_id: its conversation before `input` (`own_from` where the request's own
/// items start), refused when a reply it holds the text of was deleted.
std::optional<api_error> prepend_previous(const json::value& prev, json::array& input,
                                          response_store& store, const std::string& scope,
                                          expansion_budget& budget, responses_expansion& out,
                                          std::size_t& own_from) {
    if (!prev.is_string())
        return invalid_value("previous_response_id", "previous_response_id must be a string");
    const std::string id(prev.get_string());
    auto stored = store.enabled() ? store.chain(scope, id) : std::nullopt;
    if (!stored)
        return not_stored("previous_response_id", "no stored response '" + excerpt(id) + "'",
                          store);
    if (!stored->deleted.empty()) {
        auto e = invalid_value("previous_response_id",
                               "stored response '" + excerpt(id) + "' continues response '" +
                                   excerpt(stored->deleted) +
                                   "', which was deleted: its conversation cannot go on");
        e.suggestion = "start a new conversation, or send the items you mean to keep in input";
        return e;
    }
    if (auto e = budget.add(stored->items.size(), "previous_response_id"))
        return e;
    auto earlier = json::parse(stored->items).as_array();
    own_from = earlier.size();
    for (auto& it : input)
        earlier.push_back(std::move(it));
    input = std::move(earlier);
    for (const auto& c : stored->continues)
        note_continued(out, c);
    note_continued(out, id);
    return std::nullopt;
}

/// Each item_reference of `input` replaced by the stored item, counted and bounded as it goes.
std::optional<api_error> resolve_references(json::array& input, response_store& store,
                                            const std::string& scope, expansion_budget& budget,
                                            responses_expansion& out, bool& changed) {
    std::size_t references = 0;
    for (std::size_t i = 0; i < input.size(); ++i) {
        auto* io = input[i].if_object();
        const auto* type = io ? io->if_contains("type") : nullptr;
        if (!type || !type->is_string() || type->get_string() != "item_reference")
            continue;
        const auto where = "input[" + std::to_string(i) + "]: ";
        if (++references > max_item_references) {
            auto e =
                invalid_value("input", where + "more than " + std::to_string(max_item_references) +
                                           " item_reference items (max_item_references)");
            e.suggestion = "name each stored item once, or send the items themselves";
            return e;
        }
        const auto* id = io->if_contains("id");
        if (!id || !id->is_string())
            return invalid_value("input", where + "an item_reference needs a string \"id\"");
        const std::string name(id->get_string());
        auto stored = store.enabled() ? store.item_of(scope, name) : std::nullopt;
        if (!stored)
            return not_stored("input", where + "no stored item '" + excerpt(name) + "'", store);
        if (auto e = budget.add(stored->second.size(), "input", where))
            return e;
        input[i] = json::parse(stored->second);
        note_continued(out, stored->first);
        changed = true;
    }
    return std::nullopt;
}

} // namespace

std::variant<responses_expansion, api_error> expand_responses_request(std::string_view body,
                                                                      response_store& store,
                                                                      const std::string& scope,
                                                                      std::size_t max_bytes) {
    responses_expansion out;
    auto parsed = parse_request_json(body);
    auto* root = std::get_if<json::value>(&parsed);
    auto* o = root ? root->if_object() : nullptr;
    if (!o) {
        out.body = std::string(body);
        return out;
    }
    const auto* store_flag = o->if_contains("store");
    out.store =
        store.enabled() && !(store_flag && store_flag->is_bool() && !store_flag->get_bool());
    json::array input;
    if (const auto* in = o->if_contains("input")) {
        if (in->is_string())
            input.push_back(json::object{{"type", "message"}, {"role", "user"}, {"content", *in}});
        else if (in->is_array())
            input = in->get_array();
        else {
            out.body = std::string(body); // the parser names what is wrong with it
            return out;
        }
    }
    expansion_budget budget{body.size(), max_bytes};
    bool changed = false;
    std::size_t own_from = 0; ///< where the request's own items start in `input`
    if (const auto* prev = o->if_contains("previous_response_id"); prev && !prev->is_null()) {
        if (auto e = prepend_previous(*prev, input, store, scope, budget, out, own_from))
            return *e;
        o->erase("previous_response_id");
        changed = true;
    }
    if (auto e = resolve_references(input, store, scope, budget, out, changed))
        return *e;
    out.input_items = json::serialize(input);
    json::array own;
    for (std::size_t i = own_from; i < input.size(); ++i)
        own.push_back(input[i]);
    out.own_input = json::serialize(own);
    if (!changed) {
        out.body = std::string(body);
        return out;
    }
    (*o)["input"] = std::move(input);
    out.body = json::serialize(*root);
    if (out.body.size() > max_bytes)
        return *expansion_budget{out.body.size(), max_bytes}.add(0, "previous_response_id");
    return out;
}

std::string stored_input_items(std::string_view own_input, const std::string& response_id) {
    boost::system::error_code ec;
    auto v = json::parse(own_input, ec);
    if (ec || !v.is_array())
        return "[]";
    const auto tail = response_id.substr(std::min(response_id.size(), response_id.find('_') + 1));
    auto& items = v.get_array();
    for (std::size_t i = 0; i < items.size(); ++i) {
        auto* o = items[i].if_object();
        if (!o)
            continue;
        if (!o->contains("type"))
            (*o)["type"] = "message";
        if (!o->contains("id"))
            (*o)["id"] =
                (o->at("type") == "message" ? "msg_" : "item_") + tail + "_in" + std::to_string(i);
    }
    return json::serialize(v);
}

std::variant<std::string, api_error> input_items_page(const std::string& items,
                                                      std::string_view order,
                                                      std::string_view limit,
                                                      std::string_view after) {
    if (!order.empty() && order != "asc" && order != "desc")
        return invalid_value("order", "order must be asc or desc");
    std::size_t n = 20;
    if (!limit.empty()) {
        n = 0;
        for (char ch : limit) {
            if (ch < '0' || ch > '9' || n > 100)
                return invalid_value("limit", "limit must be an integer within 1..100");
            n = n * 10 + static_cast<std::size_t>(ch - '0');
        }
        if (n < 1 || n > 100)
            return invalid_value("limit", "limit must be an integer within 1..100");
    }
    auto all = json::parse(items).as_array();
    if (order != "asc")
        std::reverse(all.begin(), all.end());
    std::size_t from = 0;
    if (!after.empty()) {
        const auto it = std::find_if(all.begin(), all.end(), [&](const json::value& e) {
            const auto* o = e.if_object();
            const auto* id = o ? o->if_contains("id") : nullptr;
            return id && id->is_string() && id->get_string() == after;
        });
        if (it == all.end())
            return invalid_value("after", "after names no input item of this response");
        from = static_cast<std::size_t>(it - all.begin()) + 1;
    }
    json::array data;
    for (std::size_t i = from; i < all.size() && data.size() < n; ++i)
        data.push_back(all[i]);
    const bool more = from + data.size() < all.size();
    auto id_of = [](const json::value& e) -> json::value {
        const auto* o = e.if_object();
        const auto* id = o ? o->if_contains("id") : nullptr;
        return id ? *id : json::value(nullptr);
    };
    json::object page{{"object", "list"}};
    page["first_id"] = data.empty() ? json::value(nullptr) : id_of(data.front());
    page["last_id"] = data.empty() ? json::value(nullptr) : id_of(data.back());
    page["has_more"] = more;
    page["data"] = std::move(data);
    return json::serialize(page);
}

} // namespace bitnet::http
