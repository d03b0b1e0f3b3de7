#include "batch/fingerprint.hpp"

#include <cstdint>
#include <cstdio>
#include <span>
#include <type_traits>
#include <variant>

#include "batch/manifest.hpp"

namespace apron::batch {

namespace {

// A mask's shape, anchor and the CRC-32 of its weights' bytes (the same weights give the same bits).
std::string mask_text(const Mask& m) {
    const auto bytes = std::span(reinterpret_cast<const std::uint8_t*>(m.weights.data()), m.weights.size() * sizeof(double));
    char text[80];
    std::snprintf(text, sizeof text, "%dx%d@%d,%d crc %08x", m.width, m.height, m.anchor_x, m.anchor_y,
                  unsigned(crc32_of(bytes)));
    return text;
}

} // namespace

std::string fingerprint(const BatchOptions& o, const InputSet& inputs, const OutputNaming& naming) {
    std::string f = std::string("apron ") + APRON_VERSION + "; ops";
    for (const OpProgram& op : o.pipeline.operations()) f += " " + op.spec;
    for (const OpProgram& op : o.pipeline.operations())
        for (const Step& step : op.steps)
            std::visit(
                [&](const auto& action) {
                    using A = std::decay_t<decltype(action)>;
                    const Mask* m = nullptr;
                    if constexpr (std::is_same_v<A, LinearStep>) m = &action.mask;
                    if constexpr (std::is_same_v<A, MorphStep>) m = &action.element;
                    if (m) f += "; weights " + mask_text(*m);
                },
                step.action);
    f += "; out-type " + std::string(o.run.out_type ? to_string(*o.run.out_type) : "input");
    f += "; backend " + std::string(to_string(o.run.backend)) + "; algo " + to_string(o.run.algorithm);
    if (inputs.job) f += "; padding " + std::to_string(inputs.job->pad_x) + "," + std::to_string(inputs.job->pad_y);
    // The same 16-bit PNM bytes are other pixels in the other byte order.
    f += std::string("; pnm byte order ") + (o.read.pnm_byte_order == ByteOrder::little ? "little" : "big");
    f += "; name " + naming.pattern + "; format " + (naming.format ? extension_of(*naming.format) : "auto");
    f += "; quality " + std::to_string(o.write.jpeg_quality);
    if (!o.keep_metadata) f += "; metadata stripped";
    if (o.auto_orient) f += "; auto-orient";
    return f;
}

} // namespace apron::batch
