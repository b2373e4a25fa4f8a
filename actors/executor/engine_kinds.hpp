// Engine kinds: how an executor turns the `engine_kind` of its order into an engine. An order is
// plain data and names a kind; the code that builds it is registered in each process under that
// name. "gguf" (model::engine::load, with the order's file identity checked after the load) is
// always there; tests register stand-in engines under kinds of their own.
#pragma once

#include "messages/orders.hpp"
#include "model/engine/engine.hpp"

#include <functional>
#include <memory>
#include <string>

namespace bitnet::actors {

using engine_factory =
    std::function<result<std::unique_ptr<model::engine>>(const msg::executor_order&)>;

/// Registers (or replaces) `kind`. Thread-safe; factories run on executor threads, so they must
/// be thread-safe too.
void register_engine_kind(const std::string& kind, engine_factory make);

/// Builds the engine `order` asks for: not_found for a kind nobody registered.
[[nodiscard]] result<std::unique_ptr<model::engine>> make_engine(const msg::executor_order& order);

} // namespace bitnet::actors
