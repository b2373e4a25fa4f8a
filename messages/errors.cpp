#include "messages/errors.hpp"

#include "messages/interfaces.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/message.hpp>
#include <caf/sec.hpp>

namespace bitnet::msg {

caf::atom_value error_category() noexcept {
    return caf::atom("bitnet");
}

caf::error to_caf_error(errc code, std::string message) {
    return caf::error{static_cast<std::uint8_t>(code), error_category(),
                      caf::make_message(std::move(message))};
}

caf::error to_caf_error(errc code, std::string message, std::uint32_t retry_after_s) {
    return caf::error{static_cast<std::uint8_t>(code), error_category(),
                      caf::make_message(std::move(message), retry_after_s)};
}

// The context is (message), (message, retry_after_s) or (message, retry_after_s, param).
std::uint32_t retry_after_of(const caf::error& e) {
    const auto& ctx = e.context();
    if (e.category() == error_category() && ctx.size() >= 2 && ctx.match_element<std::uint32_t>(1))
        return ctx.get_as<std::uint32_t>(1);
    return 0;
}

caf::error to_caf_error(const bitnet::error& e) {
    if (e.param.empty())
        return to_caf_error(e.value(), e.message);
    return caf::error{static_cast<std::uint8_t>(e.value()), error_category(),
                      caf::make_message(e.message, std::uint32_t{0}, e.param)};
}

bitnet::error from_caf_error(const caf::error& e) {
    if (!e)
        return {errc::internal, "no error (a caller converted success)"};
    if (e.category() == error_category()) {
        std::string text;
        const auto& ctx = e.context();
        std::string param;
        if (ctx.size() >= 1 && ctx.match_element<std::string>(0))
            text = ctx.get_as<std::string>(0);
        if (ctx.size() >= 3 && ctx.match_element<std::string>(2))
            param = ctx.get_as<std::string>(2);
        return {static_cast<errc>(e.code()), std::move(text), std::move(param)};
    }
    if (e.category() == caf::atom("system")) {
        switch (static_cast<caf::sec>(e.code())) {
        case caf::sec::request_timeout:
            return {errc::timeout, "no reply in time: " + caf::to_string(e)};
        case caf::sec::request_receiver_down:
            return {errc::cancelled, "the receiving actor is gone: " + caf::to_string(e)};
        default:
            break;
        }
    }
    return {errc::internal, caf::to_string(e)};
}

void register_messages(caf::actor_system_config& cfg) {
    cfg.add_message_types<caf::id_block::bitnet>();
    // The typed handles cross process boundaries too (remote executors); names must match.
    cfg.add_message_type<sink_actor>("bitnet::msg::sink_actor");
    cfg.add_message_type<executor_actor>("bitnet::msg::executor_actor");
    cfg.add_message_type<batcher_actor>("bitnet::msg::batcher_actor");
    cfg.add_message_type<text_actor>("bitnet::msg::text_actor");
    cfg.add_message_type<supervisor_actor>("bitnet::msg::supervisor_actor");
    cfg.add_message_type<cluster_actor>("bitnet::msg::cluster_actor");
    cfg.add_message_type<relay_actor>("bitnet::msg::relay_actor");
    cfg.add_message_type<std::vector<replica_view>>("std::vector<bitnet::msg::replica_view>");
    cfg.add_message_type<std::vector<token_id>>("std::vector<bitnet::msg::token_id>");
    cfg.add_message_type<std::vector<batcher_stats>>("std::vector<bitnet::msg::batcher_stats>");
    cfg.add_message_type<std::vector<model_status>>("std::vector<bitnet::msg::model_status>");
    cfg.add_error_category(
        error_category(), [](std::uint8_t code, caf::atom_value, const caf::message& ctx) {
            std::string out = std::string("bitnet::") + errc_name(static_cast<errc>(code));
            if (ctx.size() >= 1 && ctx.match_element<std::string>(0))
                out += ": " + ctx.get_as<std::string>(0);
            return out;
        });
}

} // namespace bitnet::msg
