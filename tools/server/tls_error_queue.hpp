// The cluster's TLS refusals as tls_error_queue.cpp sees them (CAF writes no line and counts
// nothing for them): a hook the start-up sets, so that each one is counted.
#pragma once

#include <functional>

namespace bitnet::server {

/// Runs `f` (on the middleman's thread) for each cluster TLS session refused or broken with an
/// OpenSSL error. Set once, before the cluster listens or dials.
void on_cluster_tls_refusal(std::function<void()> f);

} // namespace bitnet::server
