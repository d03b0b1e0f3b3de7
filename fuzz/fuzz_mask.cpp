// Fuzzes the mask-file parser and the analyses run on every parsed mask.
#include <cstdint>
#include <string_view>

#include "apron/errors.hpp"
#include "apron/mask.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const apron::Mask m = apron::parse_mask_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
        if (m.weights.size() <= 4096) {
            (void)apron::separable_form(m);
            if (auto im = apron::integer_form(m)) (void)apron::integer_separable_form(*im, m.width, m.height);
            (void)apron::flipped(m);
        }
    } catch (const apron::Error&) {
    }
    try {  // a volume's mask ("W H D"), or the same text as one plane
        for (const apron::Mask& m : apron::parse_mask_planes_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz"))
            if (m.weights.size() <= 4096) (void)apron::flipped(m);
    } catch (const apron::Error&) {
    }
    return 0;
}
