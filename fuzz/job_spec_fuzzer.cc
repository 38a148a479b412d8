// Fuzzes the job-spec path of POST /v1/jobs: nlohmann::json::parse, then the
// strict parser, then resolution against a v3-32 pool. The parser's contract
// (api/job_spec.h): a spec exactly when there are no errors, every error
// naming what is wrong; nothing may crash or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "api/job_spec.h"
#include "api/resolution.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // Non-throwing parse: what the service answers 400 to never reaches the parser.
  const nlohmann::json body = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;

  auto spec = tpujobs::api::parse_job_spec(body);
  const std::vector<tpujobs::base::FieldError> errors =
      spec ? std::vector<tpujobs::base::FieldError>{} : spec.error().fields;
  check(spec.ok() || !errors.empty());
  for (const tpujobs::base::FieldError& e : errors) {
    check(!e.message.empty());
    // Errors are shown as JSON: every one must serialise.
    check(!tpujobs::api::to_json(e)
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
               .empty());
  }
  if (body.is_string()) (void)tpujobs::api::parse_duration(body.get<std::string>());
  if (!spec) return 0;

  check(spec->name.size() <= 128);
  check(spec->training.data.batch_size >= 1);
  const tpujobs::scheduler::PoolCapacity pool{{{tpujobs::scheduler::Generation::kV3, 4}}};
  const tpujobs::base::Result<tpujobs::api::Resolution> resolution =
      tpujobs::api::resolve(spec->trainer, pool);
  if (!resolution.ok()) {
    check(!resolution.error().fields.empty());
    for (const tpujobs::base::FieldError& p : resolution.error().fields) check(!p.message.empty());
    return 0;
  }
  *spec = tpujobs::api::apply_resolution(*resolution, std::move(*spec));
  check(tpujobs::api::resolution_json(*resolution).is_object());
  return 0;
}
