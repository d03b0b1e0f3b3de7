// The override table (overrides.hpp): the one place apron reads its tuning variables.
#include "core/overrides.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace apron {
namespace {

int env_int(const char* name, int unset) {
    const char* v = std::getenv(name);
    return v && *v ? std::atoi(v) : unset;
}

bool env_is(const char* name, const char* value) {
    const char* v = std::getenv(name);
    return v && std::strcmp(v, value) == 0;
}

} // namespace

std::string Overrides::describe() const {
    std::string s;
    auto add = [&](const std::string& part) { s += (s.empty() ? "" : " ") + part; };
    if (fft_path >= 0) add("APRON_FFT=" + std::to_string(fft_path));
    if (!calibration.empty()) add("APRON_CALIBRATION=" + calibration);
    if (fft_side) add("APRON_FFT_SIDE=" + std::to_string(fft_side));
    if (fft_batch) add("APRON_FFT_BATCH=" + std::to_string(fft_batch));
    if (imma_off) add("APRON_IMMA=0");
    if (dp4a_off) add("APRON_DP4A=0");
    if (direct_regs >= 0) add("APRON_DIRECT_REGS=" + std::to_string(direct_regs));
    if (runtime_off) add("APRON_RUNTIME_DIRECT=0");
    if (column_on) add("APRON_COLUMN=1");
    if (rtc_integer) add("APRON_RTC_INTEGER=1");
    if (chords_variant >= 0) add("APRON_CHORDS_VARIANT=" + std::to_string(chords_variant));
    if (volume_fused) add("APRON_VOLUME_FUSED=1");
    if (volume_rows > 0) add("APRON_VOLUME_RY=" + std::to_string(volume_rows));
    return s;
}

namespace {

Overrides& table() {
    static Overrides o = [] {
        Overrides r;
        r.fft_path = env_is("APRON_FFT", "0") ? 0 : env_is("APRON_FFT", "1") ? 1 : -1;
        if (const char* file = std::getenv("APRON_CALIBRATION")) r.calibration = file;
        r.fft_side = env_int("APRON_FFT_SIDE", 0);
        r.fft_batch = env_int("APRON_FFT_BATCH", 0);
        r.imma_off = env_is("APRON_IMMA", "0");
        r.dp4a_off = env_is("APRON_DP4A", "0");
        r.direct_regs = env_int("APRON_DIRECT_REGS", -1);
        r.runtime_off = env_is("APRON_RUNTIME_DIRECT", "0");
        r.column_on = env_is("APRON_COLUMN", "1");
        r.rtc_integer = env_is("APRON_RTC_INTEGER", "1");
        r.chords_variant = env_int("APRON_CHORDS_VARIANT", -1);
        r.volume_fused = env_is("APRON_VOLUME_FUSED", "1");
        r.volume_rows = env_int("APRON_VOLUME_RY", 0);
        return r;
    }();
    return o;
}

} // namespace

const Overrides& overrides() { return table(); }

const EnvironmentSettings& environment_settings() {
    static const EnvironmentSettings s = [] {
        EnvironmentSettings r;
        auto set = [](const char* name) -> std::string {
            const char* v = std::getenv(name);
            return v ? v : "";
        };
        if (set("APRON_RTC_DISK_CACHE") != "0") {
            if (const std::string d = set("APRON_RTC_CACHE_DIR"); !d.empty()) r.rtc_cache_dir = d;
            else if (const std::string x = set("XDG_CACHE_HOME"); !x.empty()) r.rtc_cache_dir = x + "/apron";
            else if (const std::string h = set("HOME"); !h.empty()) r.rtc_cache_dir = h + "/.cache/apron";
        }
        if (const std::string p = set("APRON_PROGRESS_SECONDS"); !p.empty()) r.progress_seconds = std::max(0.0, std::atof(p.c_str()));
        for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) r.mpi_launched = r.mpi_launched || std::getenv(v);
        return r;
    }();
    return s;
}

OverrideScope::OverrideScope(Overrides o) : saved_(std::move(table())) { table() = std::move(o); }
OverrideScope::~OverrideScope() { table() = std::move(saved_); }

} // namespace apron
