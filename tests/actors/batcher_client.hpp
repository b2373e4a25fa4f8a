// A test's side of a batcher: requests submitted from scoped actors acting as their sinks, and
// everything each sink received until its request ended.
#pragma once

#include "messages/errors.hpp"
#include "messages/interfaces.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace bitnet::test {

/// Everything a sink received for one request.
struct transcript {
    std::vector<msg::token_event> tokens; ///< including a text-only tail (token -1), if any
    std::optional<msg::completion> done;  ///< the last one (n > 1: one per choice, in `dones`)
    std::vector<msg::completion> dones;
    std::optional<bitnet::error> failed;

    [[nodiscard]] std::string text() const {
        std::string s;
        for (const auto& t : tokens)
            s += t.text;
        return s;
    }
};

/// Submits every request before collecting any (each from its own sink), so they share steps;
/// collects until each is done or failed, or `idle` passes without a message for it.
inline std::vector<transcript> run_together(caf::actor_system& sys,
                                            const msg::batcher_actor& batcher,
                                            const std::vector<msg::generate_request>& reqs,
                                            std::chrono::seconds idle = std::chrono::seconds(10)) {
    std::vector<std::unique_ptr<caf::scoped_actor>> sinks;
    std::vector<transcript> out(reqs.size());
    std::vector<bool> finished(reqs.size(), false);
    for (std::size_t i = 0; i < reqs.size(); ++i) {
        sinks.push_back(std::make_unique<caf::scoped_actor>(sys));
        auto& self = *sinks.back();
        self->request(batcher, std::chrono::seconds(5), msg::submit_atom_v, reqs[i],
                      caf::actor_cast<msg::sink_actor>(self))
            .receive([](msg::request_id) {},
                     [&](const caf::error& e) {
                         out[i].failed = msg::from_caf_error(e);
                         finished[i] = true;
                     });
    }
    for (std::size_t i = 0; i < reqs.size(); ++i)
        for (int n = 0; n < 1000 && !finished[i]; ++n)
            (*sinks[i])->receive(
                [&](msg::token_atom, msg::token_event ev) { out[i].tokens.push_back(ev); },
                [&](msg::done_atom, msg::completion c) {
                    out[i].dones.push_back(c);
                    out[i].done = c;
                    finished[i] = out[i].dones.size() >= std::max(reqs[i].n, 1u);
                },
                [&](msg::fail_atom, msg::request_id, caf::error e) {
                    out[i].failed = msg::from_caf_error(e);
                    finished[i] = true;
                },
                caf::after(idle) >> [&] { finished[i] = true; });
    return out;
}

/// The batcher's counters, asked for now.
inline msg::batcher_stats batcher_stats_of(caf::actor_system& sys,
                                           const msg::batcher_actor& batcher) {
    caf::scoped_actor self{sys};
    msg::batcher_stats out;
    self->request(batcher, std::chrono::seconds(5), msg::stats_atom_v)
        .receive([&](const msg::batcher_stats& s) { out = s; },
                 [](const caf::error& e) { FAIL(caf::to_string(e)); });
    return out;
}

} // namespace bitnet::test
