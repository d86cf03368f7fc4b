// Certificate rotation on SIGHUP, with the old certificates kept when the new
// files are bad.
//
// gRPC's file-watcher provider re-reads the files it is given every
// kCertRefreshSeconds and takes whatever it finds. So it is given copies, in
// a private folder of the data directory (0700, files 0600), and only Reload
// replaces them: it reads the operator's files, checks them (each parses as
// PEM; the key is the certificate's; the certificate is not expired; the
// client CA holds at least one certificate) and, if they pass, writes the
// copies (each to a temporary name, then renamed), which the watcher serves
// within kCertRefreshSeconds. If they fail, the copies stay and so do the
// certificates in use. A certificate edited in place is therefore not served
// until SIGHUP.
//
// Thread-safety: Reload may run concurrently with anything but another Reload
// (stratad calls it from its one signal handler).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "server/base/tls_credentials.h"

namespace strata {

class TlsReloader {
 public:
  // Checks `source` and copies it into `private_dir` (created). Errors as
  // Reload's. REQUIRES: source.enabled().
  static Result<std::unique_ptr<TlsReloader>> Create(const TlsFiles& source, std::string private_dir);

  // The copies: what the credentials are built from.
  const TlsFiles& served() const { return served_; }

  // Re-reads and checks the operator's files; on success replaces the copies
  // and returns what they now hold, for the log ("certificate CN=node-1,
  // expires ...; client CA: 1 certificate"). On failure InvalidArgument or
  // IOError naming the file, and nothing changes.
  Result<std::string> Reload();

 private:
  TlsReloader(TlsFiles source, std::string private_dir);

  const TlsFiles source_;
  const std::string dir_;
  TlsFiles served_;
};

}  // namespace strata
