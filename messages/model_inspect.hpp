// The CAF inspect overloads of the model's value types that messages carry (sampler settings,
// a sequence's chunk, kernel choices). They live in the model's namespace, where CAF finds them
// by argument-dependent lookup, but here in messages/: model/ knows nothing of CAF.
#pragma once

#include "model/engine/batch.hpp"
#include "model/engine/kernel_choice.hpp"
#include "model/sampling/sampling_params.hpp"

#include <caf/meta/type_name.hpp>

namespace bitnet::model {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, logit_bias_entry& x) {
    return f(caf::meta::type_name("logit_bias_entry"), x.token, x.bias);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sampling_params& x) {
    return f(caf::meta::type_name("sampling_params"), x.temperature, x.top_k, x.top_p, x.min_p,
             x.repetition_penalty, x.repeat_last_n, x.presence_penalty, x.frequency_penalty,
             x.logit_bias, x.min_tokens, x.ignore_eos, x.eog_ids, x.stop_ids, x.seed, x.n_logprobs,
             x.report_logprob);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, seq_chunk& x) {
    return f(caf::meta::type_name("seq_chunk"), x.seq, x.tokens, x.pos0, x.want_logits,
             x.decoded_from, x.all_logits);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, family_timing& x) {
    return f(caf::meta::type_name("family_timing"), x.family, x.micros);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kernel_choice& x) {
    return f(caf::meta::type_name("kernel_choice"), x.op, x.family, x.source, x.tokens, x.timings);
}

} // namespace bitnet::model
