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

TEST(StoreName, APasswordWithAnUnencodedSlashOrQuestionMarkNeverShows) {
    EXPECT_EQ(printable_store_name("postgresql://lab:pa/ss@db/bench"), "postgresql://lab@db/bench");
    EXPECT_EQ(printable_store_name("postgresql://lab:pa?ss@db/bench"), "postgresql://lab@db/bench");
    EXPECT_EQ(printable_store_name("postgresql://db/bench?sslpassword=k&pass%zzword=p&port=5"),
              "postgresql://db/bench?port=5");
}

// Names meant for PostgreSQL that are no URI are refused (SQLite would make a file of them),
// and shown without their password.
TEST(StoreName, SchemeLikeNamesAndKeyValueStringsAreNoStore) {
    for (const char* name : {"postgresql:", "postgresql:/", "postgres:", "postgresql:/db",
                             "POSTGRESQL://db/bench", "Postgres://db", "postgresql:u:pw@db/bench",
                             "host=db dbname=bench", "  dbname = bench", "password=x host=db"}) {
        SCOPED_TRACE(name);
        EXPECT_NE(unusable_store_name(name), "");
    }
    for (const char* name :
         {"postgresql://", "postgresql://db/bench", "postgres://u:p@db/b", "results.sqlite",
          "./postgresql:", "run=3.sqlite", "postgresql", "hosts=1.sqlite", "/data/host=db"}) {
        SCOPED_TRACE(name);
        EXPECT_EQ(unusable_store_name(name), "");
    }
    EXPECT_EQ(printable_store_name("postgresql:u:pw@db/bench"), "postgresql:u@db/bench");
    EXPECT_EQ(printable_store_name("host=db password='s3 \\'cret' dbname=bench"),
              "host=db  dbname=bench");
    EXPECT_EQ(printable_store_name("host=db password = s3cret"), "host=db ");
    EXPECT_EQ(printable_store_name("run=3.sqlite"), "run=3.sqlite");
    EXPECT_EQ(printable_store_name("host=db passpass=s3cret sslpassword=k2 password=x"),
              "host=db   ");
}

TEST(StoreName, SecretsAreScrubbedFromWhatQuotesThem) {
    // libpq's own messages quote the password it cannot decode, or the whole URI.
    EXPECT_EQ(scrub_store_secrets("invalid percent-encoded token: \"s3cr%zzet\"",
                                  "postgresql://u:s3cr%zzet@127.0.0.1/db"),
              "invalid percent-encoded token: \"***\"");
    EXPECT_EQ(scrub_store_secrets("matching \"]\" in URI: \"postgresql://u:s3cret@[::1/db\"",
                                  "postgresql://u:s3cret@[::1/db"),
              "matching \"]\" in URI: \"postgresql://u@[::1/db\"");
    // Decoded, and the piece before a '/' that libpq took for a port.
    EXPECT_EQ(scrub_store_secrets("a s3cr@t b", "postgresql://u:s3cr%40t@h/db"), "a *** b");
    EXPECT_EQ(scrub_store_secrets("invalid integer value \"pa55\" for \"port\"",
                                  "postgresql://u:pa55/word@h/db"),
              "invalid integer value \"***\" for \"port\"");
    EXPECT_EQ(scrub_store_secrets("x=s3cret", "postgresql://h/db?password=s3cret"), "x=***");
    EXPECT_EQ(scrub_store_secrets("'s3 cret' \"s3 cret\"", "host=h password='s3 cret'"),
              "*** \"***\"");
    EXPECT_EQ(scrub_store_secrets("no secret here", "results.sqlite"), "no secret here");
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
