// One fingerprint for every resumable run (resume_fingerprint.hpp).
#include "run/resume_fingerprint.hpp"

#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <span>

#include "apron/border.hpp"
#include "apron/ops.hpp"
#include "core/fnv1a.hpp"
#include "plan/step_kind.hpp"

namespace apron {

namespace {

std::string step_text(const Step& step) {
    return "input " + std::to_string(step.input) + " second " + std::to_string(step.second) + " " + parameters_of(step);
}

std::string one_line(std::string s) {
    for (char& c : s)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
    return s;
}

}  // namespace

void Fingerprint::add(const std::string& name, const std::string& value) { fields_.push_back({one_line(name), one_line(value)}); }

std::string Fingerprint::text() const {
    std::string t;
    for (const FingerprintField& f : fields_) t += (t.empty() ? "" : "; ") + f.name + " " + f.value;
    return t;
}

std::string Fingerprint::id() const {
    const std::string t = text();
    return hex16(fnv1a_of(t.data(), t.size()));
}

std::optional<std::string> Fingerprint::difference_from(const Fingerprint& earlier) const {
    const auto& was = earlier.fields_;
    for (std::size_t k = 0; k < std::max(fields_.size(), was.size()); ++k) {
        if (k >= fields_.size()) return was[k].name + " was set and is not now";
        if (k >= was.size()) return fields_[k].name + " is new";
        if (was[k].name != fields_[k].name) return fields_[k].name + " differs";
        if (was[k].value == fields_[k].value) continue;
        constexpr std::size_t shown = 40;
        if (was[k].value.size() <= shown && fields_[k].value.size() <= shown)
            return fields_[k].name + " differs: " + was[k].value + " then " + fields_[k].value;
        return fields_[k].name + " differs";
    }
    return std::nullopt;
}

Fingerprint resume_fingerprint(const Pipeline& pipeline, const RunOptions& run, const InputReading& input,
                               const OutputStorage& output) {
    Fingerprint f;
    f.add("apron", APRON_VERSION);
    std::string ops;
    for (const OpProgram& op : pipeline.operations()) ops += (ops.empty() ? "" : " ") + op.spec;
    f.add("--op", ops);
    for (const OpProgram& op : pipeline.operations())
        for (std::size_t k = 0; k < op.steps.size(); ++k)
            f.add("the weights and parameters of " + op.spec + " (step " + std::to_string(k) + ")", step_text(op.steps[k]));
    f.add("--out-type", run.out_type ? to_string(*run.out_type) : "input");
    f.add("--backend", to_string(run.backend));
    f.add("--algo", to_string(run.algorithm));
    f.add("--byte-order", input.pnm_byte_order);
    if (!input.raw.empty()) f.add("--raw", input.raw);
    if (!input.padding.empty()) f.add("padding", input.padding);
    if (!input.jpeg_decoder.empty()) f.add("--jpeg-decode", input.jpeg_decoder);
    if (!output.naming.empty()) f.add("name", output.naming);
    if (!output.format.empty()) f.add("format", output.format);
    if (!output.compression.empty()) f.add("--compression", output.compression);
    if (output.tile_side) f.add("--tile", std::to_string(output.tile_side));
    if (!output.byte_order.empty()) f.add("output byte order", output.byte_order);
    if (output.jpeg_quality) f.add("--quality", std::to_string(output.jpeg_quality));
    if (output.metadata_stripped) f.add("--metadata", "strip");
    if (output.auto_orient) f.add("--auto-orient", "on");
    return f;
}

}  // namespace apron
