#pragma once
// What a resumable run's results depend on, besides the input's pixels: `apron batch` records it with every
// output in its manifest, the streaming engine at the head of its journal, and both take it from
// resume_fingerprint, so a resume notices the same changes whichever kind of run it continues. The input's
// content is checked where the work is recorded: per output (the batch manifest's CRC-32 of the input) and
// per band (the stream journal's CRC-32 of the rows each band read).
//
// A fingerprint is a list of named fields, so that a resume that sets a journal aside can say which one
// changed ("--tile differs: 256 then 512").
#include <optional>
#include <string>
#include <vector>

#include "apron/pipeline.hpp"

namespace apron {

struct FingerprintField {
    std::string name;   // an option's name where there is one ("--tile"), else words ("the weights of ...")
    std::string value;  // one line, no tab
};

class Fingerprint {
public:
    void add(const std::string& name, const std::string& value);
    const std::vector<FingerprintField>& fields() const { return fields_; }
    // "NAME VALUE; NAME VALUE; ...": one line, for people and for the batch manifest's header.
    std::string text() const;
    // 16 hex digits: a 64-bit hash (FNV-1a) of text().
    std::string id() const;
    // Why `earlier` (a recorded fingerprint) is not this one: "NAME differs: OLD then NEW" for the first field
    // that differs (the values left out where long), or names the field one of them lacks; nullopt when equal.
    std::optional<std::string> difference_from(const Fingerprint& earlier) const;

private:
    std::vector<FingerprintField> fields_;
};

// How the input is read: everything that turns the same bytes into other pixels.
struct InputReading {
    std::string pnm_byte_order = "big";  // 16-bit PNM
    std::string raw;                     // --raw WxHxC:type[:endianness], empty when the file has a header
    std::string padding;                 // a job file's padding, "X,Y"; empty: none
    std::string jpeg_decoder;            // "nvjpeg" where JPEG inputs are decoded on the GPU; empty: libjpeg-turbo
};

// How the results are stored: everything that turns the same pixels into other bytes. Empty text and zero
// numbers are left out (an option that does not apply).
struct OutputStorage {
    std::string format;              // "pgm", "tif", ..., or "auto" (from each output's name)
    std::string naming;              // batch: the output name pattern
    std::string compression;         // TIFF: none, deflate, zstd, lzw
    int tile_side = 0;               // tiled TIFF
    std::string byte_order;          // raw and PFM samples, or "native"
    int jpeg_quality = 0;
    bool metadata_stripped = false;
    bool auto_orient = false;
};

// The version, each operation's text, and for every step what it computes: a mask's or structuring element's
// shape, anchor and a hash of its weights (from a file or given as weights: editing a mask file between two
// runs changes the results), its border rule and value, normalisation, scale and delta, a combination's
// factors and operands; the output type, the backend and the algorithm asked for (float results differ in
// their last bits between them); then how the input is read and the output stored.
Fingerprint resume_fingerprint(const Pipeline& pipeline, const RunOptions& run, const InputReading& input,
                               const OutputStorage& output);

}  // namespace apron
