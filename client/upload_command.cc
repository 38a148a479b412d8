// `tpujobs upload FILE.csv`: stores a dataset to train on.
#include <filesystem>
#include <ostream>

#include "client/client_commands.h"
#include "client/session.h"

namespace tpujobs::client {
namespace {

class UploadCommand final : public Session {
 public:
  using Session::Session;

  int run() {
    const std::string& path = line_.positionals.front();
    std::optional<std::string> read = read_input();
    if (!read) return kExitRejected;
    std::string csv = std::move(*read);
    if (csv.empty()) {
      err_ << "tpujobs: " << path << " is empty; a dataset needs a header and rows\n";
      return kExitRejected;
    }
    std::string name = line_.dataset_name.value_or("");
    if (name.empty()) {
      name = path == "-" ? "upload" : std::filesystem::path(path).filename().string();
      if (name.size() > 4 && name.ends_with(".csv")) name.resize(name.size() - 4);
    }
    // Sent as the file it is (the service refuses a form, which would have
    // lost its newlines). Retried on no answer or a 5xx as every request
    // is; the key makes a retry whose first attempt was stored (its answer
    // lost) answer that dataset rather than store a second copy.
    const std::string key =
        line_.idempotency_key.empty() ? generated_idempotency_key() : line_.idempotency_key;
    HttpResponse response = call({"POST",
                                  "/v1/datasets?name=" + percent_encode(name),
                                  std::move(csv),
                                  {{"Content-Type", "text/csv"}, {"Idempotency-Key", key}}});
    if (response.status != 201 && response.status != 200)
      return report_failure(response, "uploading " + path);
    const json dataset = json::parse(response.body, nullptr, false);
    const std::string id = string_of(dataset, "id");
    if (!dataset.is_object() || id.empty()) {
      err_ << "tpujobs: the service answered the upload without a dataset id: "
           << response.body.substr(0, 300) << "\n";
      return kExitUnreachable;
    }
    if (line_.json) {
      out_ << dataset.dump(2) << "\n";
      return kExitSucceeded;
    }
    out_ << id << "\n";
    err_ << "uploaded " << path << " as dataset " << id << " ('" << name << "')"
         << (response.status == 200 ? " (same idempotency key)" : "") << ": "
         << dataset.value("rows", 0) << " rows, " << dataset.value("features", 0) << " features, "
         << dataset.value("classes", 0) << " classes\n"
         << "  train on it with: --set 'data.dataset={\"upload\":\"" << id << "\"}'\n";
    return kExitSucceeded;
  }
};

}  // namespace

int run_upload_command(const CommandLine& line, const ClientContext& context) {
  return UploadCommand(line, context).run();
}

}  // namespace tpujobs::client
