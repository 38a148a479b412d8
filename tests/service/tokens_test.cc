// API tokens and their stored form: the SHA-256 hex matches the standard
// vectors (FIPS 180-2), and a token is its prefix and 43 characters of
// base64url, different each time.
#include "service/tokens.h"

#include <gtest/gtest.h>

namespace tpujobs::service {
namespace {

TEST(HashToken, IsLowerCaseHexSha256) {
  EXPECT_EQ(hash_token("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hash_token(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(GenerateToken, IsThePrefixAndFortyThreeBase64UrlCharacters) {
  for (const char* prefix : {"tpj_", "tpjn_"}) {
    const std::string token = generate_token(prefix);
    ASSERT_EQ(token.rfind(prefix, 0), 0u) << token;
    const std::string random = token.substr(std::string(prefix).size());
    EXPECT_EQ(random.size(), 43u) << token;
    EXPECT_EQ(random.find_first_not_of(
                  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
              std::string::npos)
        << token;
  }
  EXPECT_NE(generate_token(), generate_token());
}

}  // namespace
}  // namespace tpujobs::service
