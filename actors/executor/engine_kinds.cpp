#include "actors/executor/engine_kinds.hpp"

#include "model/engine/placement/engine_placement.hpp"
#include "model/gguf/regular_file.hpp"

#include <spdlog/spdlog.h>

#include <map>
#include <mutex>
#include <new>

namespace bitnet::actors {
namespace {

/// load_engine_on, with the host's refusal to allocate (std::bad_alloc: the repacked weights, or a
/// KV pool of kv_budget_bytes) as an error in words. Left to fly, it ended the executor as a crash:
/// the supervisor restarted the load three times, then reported "internal: system_error".
result<std::unique_ptr<model::engine>> load_catching_bad_alloc(const msg::executor_order& order,
                                                               const model::placement& where) {
    try {
        return model::load_engine_on(order.engine, where);
    } catch (const std::bad_alloc&) {
        return error{errc::unsupported,
                     "out of memory on " + where.name() +
                         ": allocating the engine (its weights and a KV pool of " +
                         std::to_string(order.engine.kv_budget_bytes) +
                         " bytes, kv_budget_bytes) failed"};
    }
}

/// The engine the order's file holds, on the order's placement (the executor resolved "auto"
/// before), refused unless the path still names the file the supervisor hashed and verified (its
/// identity then is in the order): otherwise the version's id and checks would describe other
/// bytes than the ones it runs.
result<std::unique_ptr<model::engine>> load_gguf(const msg::executor_order& order) {
    auto where = model::parse_placement(order.device);
    if (!where)
        return where.error();
    spdlog::info("model '{}': loading {} on {}", order.alias, order.engine.model_path,
                 where->name());
    auto e = load_catching_bad_alloc(order, *where);
    if (!e) {
        spdlog::error("model '{}': load on {} failed: {}", order.alias, where->name(),
                      e.error().to_string());
        return e;
    }
    if (order.file != model::file_identity{}) {
        auto now = model::regular_file::open(order.engine.model_path);
        if (!now)
            return now.error();
        if (now->identity() != order.file)
            return error{errc::io_error, order.engine.model_path +
                                             " changed while it was being loaded (it is not the "
                                             "file that was hashed and verified)"};
    }
    spdlog::info("model '{}': loaded: {}", order.alias, (*e)->describe());
    return e;
}

struct registry {
    std::mutex mu;
    std::map<std::string, engine_factory> kinds{{"gguf", load_gguf}};
};

registry& kinds() {
    static registry r;
    return r;
}

} // namespace

void register_engine_kind(const std::string& kind, engine_factory make) {
    auto& r = kinds();
    std::lock_guard lock(r.mu);
    r.kinds[kind] = std::move(make);
}

result<std::unique_ptr<model::engine>> make_engine(const msg::executor_order& order) {
    engine_factory make;
    {
        auto& r = kinds();
        std::lock_guard lock(r.mu);
        auto it = r.kinds.find(order.engine_kind);
        if (it == r.kinds.end())
            return error{errc::not_found, "no engine kind '" + order.engine_kind +
                                              "' in this process (known: gguf and registered)"};
        make = it->second;
    }
    auto e = make(order);
    if (e && !*e)
        return error{errc::internal, "engine kind '" + order.engine_kind + "' built nothing"};
    return e;
}

} // namespace bitnet::actors
