#include "store/store_name.hpp"

#include <gtest/gtest.h>

namespace sb {
namespace {

TEST(StoreName, PostgresUrisAreTheTwoSchemesLibpqReads) {
    EXPECT_TRUE(is_postgres_url("postgresql://lab@db:5432/bench"));
    EXPECT_TRUE(is_postgres_url("postgres://db/bench"));
    EXPECT_TRUE(is_postgres_url("postgresql://"));
    EXPECT_FALSE(is_postgres_url("results.sqlite"));
    EXPECT_FALSE(is_postgres_url("./postgresql://x"));
    EXPECT_FALSE(is_postgres_url("postgresql:/x"));
    EXPECT_FALSE(is_postgres_url(""));
}

TEST(StoreName, ThePasswordNeverShows) {
    EXPECT_EQ(printable_store_name("postgresql://lab:s3cret@db:5432/bench"),
              "postgresql://lab@db:5432/bench");
    EXPECT_EQ(printable_store_name("postgres://lab:p%40ss@[::1]:5432/bench?sslmode=require"),
              "postgres://lab@[::1]:5432/bench?sslmode=require");
    EXPECT_EQ(
        printable_store_name(
            "postgresql://db/bench?password=x&sslmode=require&pass%77ord=y&application_name=a"),
        "postgresql://db/bench?sslmode=require&application_name=a");
    EXPECT_EQ(printable_store_name("postgresql://db/bench?password=x"), "postgresql://db/bench");
    // An '@' in the password (not percent-encoded): everything up to the last '@' before the
    // path is taken for user information, so nothing of the password shows.
    EXPECT_EQ(printable_store_name("postgresql://lab:a@b@db/bench"), "postgresql://lab@db/bench");
    EXPECT_EQ(printable_store_name("postgresql://lab@db/bench"), "postgresql://lab@db/bench");
    EXPECT_EQ(printable_store_name("results.sqlite"), "results.sqlite");
    EXPECT_EQ(printable_store_name("a:b@c.sqlite"), "a:b@c.sqlite");  // a file name
    EXPECT_TRUE(store_name_has_password("postgresql://lab:s@db/bench"));
    EXPECT_TRUE(store_name_has_password("postgresql://db/bench?password=s"));
    EXPECT_FALSE(store_name_has_password("postgresql://lab@db/bench"));
    EXPECT_FALSE(store_name_has_password("x:y@z.sqlite"));
}

TEST(StoreName, TheCommandLineKeptInADocumentHasNoPassword) {
    const std::vector<std::string> argv = {"stagebench",
                                           "run",
                                           "--db",
                                           "postgresql://lab:s3cret@db/bench",
                                           "-m",
                                           "m.gguf",
                                           "--db=postgres://u:pw@h/d?password=q"};
    const auto out = printable_argv(argv);
    EXPECT_EQ(out,
              (std::vector<std::string>{"stagebench", "run", "--db", "postgresql://lab@db/bench",
                                        "-m", "m.gguf", "--db=postgres://u@h/d"}));
}

TEST(StoreName, FallbackFilesGoBesideAFileOrHereForADatabase) {
    EXPECT_EQ(fallback_document_base("/data/r.sqlite", "20261129T093000Z"),
              "/data/r.sqlite.20261129T093000Z");
    EXPECT_EQ(fallback_document_base("postgresql://lab:pw@db:5432/bench?sslmode=require",
                                     "20261129T093000Z"),
              "bench.20261129T093000Z");
    EXPECT_EQ(fallback_document_base("postgresql://db/../etc%2Fx", "T"), "___etc_x.T");
    EXPECT_EQ(fallback_document_base("postgresql://", "T"), "postgresql.T");
    EXPECT_EQ(fallback_document_base("postgres://db:5432", "T"), "postgresql.T");
}

}  // namespace
}  // namespace sb
