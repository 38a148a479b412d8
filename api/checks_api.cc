#include "api/checks_api.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/problem.h"
#include "api/resolution.h"
#include "lightning/script_check.h"
#include "lightning/script_report.h"
#include "lightning/versions.h"
#include "pyparse/tree_sitter_python.h"
#include "scheduler/generation.h"

namespace tpujobs::api {
namespace {

using nlohmann::json;

constexpr const char* kExample =
    R"({"files": [{"path": "train.py", "text": "import lightning as L\nL.Trainer(devices=3)\n"}], )"
    R"("requirements": [{"path": "requirements.txt", "text": "lightning==2.1.3\n"}], "accelerator_type": "v3-8"})";

Response bad(int status, const std::string& field, const std::string& detail,
             const std::string& hint) {
  return problem(status, detail, {{"field", field}, {"hint", hint}});
}

// files / requirements: [{"path", "text"}]; nullopt after setting *error.
std::optional<std::vector<lightning::SourceFile>> read_files(const json& body, const char* key,
                                                             bool required,
                                                             std::optional<Response>* error) {
  std::vector<lightning::SourceFile> out;
  if (!body.contains(key)) {
    if (required)
      *error =
          bad(422, key, std::string("`") + key + "` is missing", std::string("send ") + kExample);
    return required ? std::nullopt : std::optional(out);
  }
  const json& files = body[key];
  if (!files.is_array() || (required && files.empty()) || files.size() > 1000) {
    *error =
        bad(422, key,
            std::string("`") + key + "` must be an array of 1 to 1000 {\"path\", \"text\"} objects",
            std::string("send ") + kExample);
    return std::nullopt;
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    const json& file = files[i];
    const std::string field = std::string(key) + "[" + std::to_string(i) + "]";
    if (!file.is_object() || !file.contains("text") || !file["text"].is_string() ||
        (file.contains("path") && !file["path"].is_string())) {
      *error = bad(422, field, "each file is {\"path\": string, \"text\": string}",
                   std::string("send ") + kExample);
      return std::nullopt;
    }
    lightning::SourceFile source;
    source.path = file.value("path", "file" + std::to_string(i + 1) + ".py").substr(0, 512);
    source.text = file["text"].get<std::string>();
    source.size = source.text.size();
    out.push_back(std::move(source));
  }
  return out;
}

std::optional<std::string> optional_string(const json& body, const char* key,
                                           std::optional<Response>* error) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  if (!body[key].is_string() || body[key].get<std::string>().size() > 64) {
    *error = bad(422, key, std::string("`") + key + "` must be a string",
                 std::string("send ") + kExample);
    return std::nullopt;
  }
  return body[key].get<std::string>();
}

const lightning::PythonParser& parser() {
  // The parser is stateless and thread-safe (pyparse/tree_sitter_python.h).
  static const std::unique_ptr<lightning::PythonParser> instance =
      pyparse::make_tree_sitter_parser();
  return *instance;
}

}  // namespace

std::optional<lightning::PoolView> check_pool(const std::string& accelerator_type) {
  const std::optional<scheduler::SliceType> slice = scheduler::parse_slice_type(accelerator_type);
  if (!slice) return std::nullopt;
  scheduler::PoolCapacity capacity;
  capacity.hosts[slice->generation] = slice->hosts();
  return pool_view(capacity);
}

Response check_request(const json& body) {
  if (!body.is_object())
    return bad(400, "", "the body must be a JSON object", std::string("send ") + kExample);
  std::optional<Response> error;
  const auto scripts = read_files(body, "files", true, &error);
  if (error) return std::move(*error);
  const auto requirements = read_files(body, "requirements", false, &error);
  if (error) return std::move(*error);
  lightning::ScriptCheckOptions options;
  options.accelerator_type = optional_string(body, "accelerator_type", &error);
  options.lightning_version = optional_string(body, "lightning", &error);
  options.python = optional_string(body, "python", &error);
  options.runtime = optional_string(body, "runtime", &error);
  if (error) return std::move(*error);
  if (options.runtime && *options.runtime != "pjrt" && *options.runtime != "xrt")
    return bad(422, "runtime", "`runtime` must be \"pjrt\" or \"xrt\"",
               "use \"pjrt\" (PJRT_DEVICE set) or \"xrt\" (XRT_TPU_CONFIG set), or leave it out "
               "for what the pinned torch_xla picks");
  if (options.lightning_version && !lightning::find_release(*options.lightning_version))
    return bad(422, "lightning", "`lightning` is not a release tpujobs reproduces",
               "use one of " + lightning::release_names() + ", or a full version such as 2.1.3");
  std::optional<lightning::PoolView> pool = check_pool(options.accelerator_type.value_or("v3-32"));
  if (!pool)
    return bad(422, "accelerator_type", "`accelerator_type` is not a TPU type the pool knows",
               "use a type such as v3-8, v4-8 or v3-32");
  options.pool = std::move(*pool);
  const lightning::CheckReport report =
      lightning::check_sources(*scripts, *requirements, options, parser());
  json answer = lightning::check_report_json(report);
  answer["valid"] = !report.has_errors();
  return json_response(200, answer);
}

void add_check_routes(Router& router) {
  router.add(
      "POST", "/v1/checks", Access::kTenant,
      [](Request& request, const PathParams&, ResponseWriterPtr writer) {
        const json body = json::parse(request.body, nullptr, false);
        if (body.is_discarded()) {
          writer->respond(bad(400, "", "the body is not JSON", std::string("send ") + kExample));
          return;
        }
        writer->respond(check_request(body));
      });
}

}  // namespace tpujobs::api
