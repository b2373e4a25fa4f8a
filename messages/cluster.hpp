// The values the nodes of a cluster exchange over CAF remoting (actors/cluster/cluster_node.hpp):
// who is a member, which model replicas each node serves and how busy they are (a heartbeat carries
// all of it), and a step's output for the streams a remote node routed here, batched per step per
// node. Plain structs with their CAF inspect overloads, registered under the same names in every
// node.
#pragma once

#include "messages/ids.hpp"
#include "messages/types.hpp"

#include <caf/actor.hpp>
#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace bitnet::msg {

/// A member as peers reach it: its name and its cluster address ("host:port").
struct member_address {
    std::string name;
    std::string address;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, member_address& x) {
    return f(caf::meta::type_name("member_address"), x.name, x.address);
}

/// One model version a node serves, as every node's admission sees it: where to send requests
/// (its batcher), who tokenizes for it (its text actor), what a request must fit (`info`), and how
/// much work it holds (routing sends a request to the replica with the least).
struct replica_view {
    std::string node; ///< the serving node's name
    std::string alias;
    std::string version;
    caf::actor batcher; ///< a batcher_actor (untyped here: the handle types are declared later)
    caf::actor text;    ///< its text_actor
    executor_info info;
    /// Prompt tokens still to prefill plus tokens still to generate, over its queued and running
    /// requests, as last measured.
    std::uint64_t outstanding_tokens = 0;
    std::uint32_t running = 0;
    std::uint32_t waiting = 0;
    /// The placement its executor runs on ("cpu", "cuda:N", "sim:N"): routing prefers the
    /// fastest device class first (actors/supervisor/device_placements.hpp, ranks_before).
    std::string device;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, replica_view& x) {
    return f(caf::meta::type_name("replica_view"), x.node, x.alias, x.version, x.batcher, x.text,
             x.info, x.outstanding_tokens, x.running, x.waiting, x.device);
}

/// The stream relay to admission: which replica a stream that lost its node continues on: one
/// of `version` of `alias` on a node that is up, never the batcher `gone` (null, or one that
/// stopped under the stream).
struct replica_query {
    std::string alias;
    std::string version;
    caf::actor gone;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, replica_query& x) {
    return f(caf::meta::type_name("replica_query"), x.alias, x.version, x.gone);
}

/// A model as one node of the cluster serves it, for GET /v1/cluster.
struct node_model {
    std::string alias;
    std::string version;
    std::string state;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_model& x) {
    return f(caf::meta::type_name("node_model"), x.alias, x.version, x.state);
}

/// What a node tells every peer at each heartbeat (and in its join): itself, its replicas and the
/// members it knows (so a node that missed a join learns of it). Never its supervisor: model
/// operations reach a node only through its cluster actor, which checks who orders them
/// (node_order).
struct node_report {
    std::string name;
    std::string address;
    std::uint64_t incarnation = 0; ///< differs after a restart under the same name
    std::vector<replica_view> replicas;
    std::vector<node_model> models; ///< every alias its supervisor holds, in any state
    std::vector<member_address> members;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_report& x) {
    return f(caf::meta::type_name("node_report"), x.name, x.address, x.incarnation, x.replicas,
             x.models, x.members);
}

/// One request's failure inside a stream_batch.
struct stream_failure {
    request_id id = 0;
    caf::error error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stream_failure& x) {
    return f(caf::meta::type_name("stream_failure"), x.id, x.error);
}

/// One step's output for the requests a remote node's relay placed on this batcher: every token,
/// end and failure of the step in one message (one per step per node, not one per token).
struct stream_batch {
    std::vector<token_event> tokens;
    std::vector<completion> done;
    std::vector<stream_failure> failed;
    [[nodiscard]] bool empty() const noexcept {
        return tokens.empty() && done.empty() && failed.empty();
    }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stream_batch& x) {
    return f(caf::meta::type_name("stream_batch"), x.tokens, x.done, x.failed);
}

/// One member as a node sees it, for GET /v1/cluster.
struct node_status {
    std::string name;
    std::string address;
    std::string state;             ///< up | suspect | down
    bool self = false;             ///< the node that answered
    std::int64_t last_seen_ms = 0; ///< since its last heartbeat; 0 for the node itself
    std::vector<node_model> models;
    std::uint32_t running = 0;
    std::uint32_t waiting = 0;
    std::string roles; ///< "replica,router,admin" or a part of it, as this node trusts them
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_status& x) {
    return f(caf::meta::type_name("node_status"), x.name, x.address, x.state, x.self,
             x.last_seen_ms, x.models, x.running, x.waiting, x.roles);
}

/// A rolling model operation across nodes (load, rollback, unload) and where it stands.
struct roll_status {
    std::string id;
    std::string kind; ///< load | rollback | unload
    std::string alias;
    std::string version; ///< the version it brings in, once the first node knows it
    std::string state;   ///< running | done | failed
    std::string failure;
    std::vector<std::string> nodes; ///< in the order they are rolled
    std::vector<std::string> done;  ///< nodes finished so far
    std::int64_t started_ms = 0;
    std::int64_t finished_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, roll_status& x) {
    return f(caf::meta::type_name("roll_status"), x.id, x.kind, x.alias, x.version, x.state,
             x.failure, x.nodes, x.done, x.started_ms, x.finished_ms);
}

/// GET /v1/cluster: every member and the rolling operations.
struct cluster_view {
    std::string self;
    bool clustered = false; ///< false: a single node without --cluster-listen
    std::vector<node_status> nodes;
    std::vector<roll_status> rolls;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_view& x) {
    return f(caf::meta::type_name("cluster_view"), x.self, x.clustered, x.nodes, x.rolls);
}

/// A rolling operation's order: what the supervisor's own order says, the nodes it is limited
/// to (empty = every node that serves the alias), and which operation. `credential` is the admin
/// key the HTTP request came with (empty under admin_open): it never leaves the node, each peer
/// gets a node_order with a proof made from it.
struct roll_order {
    std::string kind; ///< load | rollback | unload
    load_order load;  ///< for load; `alias` for every kind
    std::vector<std::string> nodes;
    std::string credential{};
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, roll_order& x) {
    return f(caf::meta::type_name("roll_order"), x.kind, x.load, x.nodes, x.credential);
}

/// One node's part of a rolling operation, sent by the node that runs the roll to the target's
/// cluster actor. `proof` is HMAC-SHA256 under the admin key of the request that started the
/// roll over every other field (actors/cluster/order_proof.hpp): the target runs the order only
/// when one of its own admin keys gives the same proof, it is the named target, and `issued_ms` is
/// within five minutes of its clock. A peer without the admin key cannot make one.
struct node_order {
    std::string kind; ///< load | rollback | unload
    load_order load;  ///< `alias` for every kind
    std::string issuer;
    std::string target;
    std::int64_t issued_ms = 0;
    std::string proof; ///< hex; empty when the issuer has no admin key (admin_open)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_order& x) {
    return f(caf::meta::type_name("node_order"), x.kind, x.load, x.issuer, x.target, x.issued_ms,
             x.proof);
}

/// Who a node is, sent with its join and with the answer to one (actors/cluster/peer_identity.hpp).
/// Over TLS: its certificate chain (PEM, leaf first) and a signature by the certificate's key
/// over its name, the CAF node ids of signer and receiver and `issued_ms`; the receiver checks
/// the chain against the cluster CA, the name against the certificate, and takes the roles from
/// it. In insecure mode both are empty and `roles` is what the node declares (nothing proves it).
struct join_proof {
    std::string chain_pem;
    std::int64_t issued_ms = 0;
    std::string signature;  ///< raw bytes
    std::uint8_t roles = 0; ///< common/peer_roles.hpp bits; only read in insecure mode
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, join_proof& x) {
    return f(caf::meta::type_name("join_proof"), x.chain_pem, x.issued_ms, x.signature, x.roles);
}

} // namespace bitnet::msg
