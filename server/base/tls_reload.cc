#include "server/base/tls_reload.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

namespace strata {

namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

Status ReadFile(const std::string& what, const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus(what + " " + path + " cannot be read", errno != 0 ? errno : EIO);
  std::ostringstream text;
  text << in.rdbuf();
  *out = text.str();
  return Status::OK();
}

BioPtr MemoryBio(const std::string& pem) { return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))); }

std::string Subject(X509* cert) {
  char buffer[256];
  X509_NAME_oneline(X509_get_subject_name(cert), buffer, sizeof buffer);
  return buffer;
}

std::string NotAfter(X509* cert) {
  BioPtr out(BIO_new(BIO_s_mem()));
  ASN1_TIME_print(out.get(), X509_get0_notAfter(cert));
  char* data = nullptr;
  const long n = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

// Every certificate in `pem` (at least one), or InvalidArgument.
Status ParseCertificates(const std::string& what, const std::string& path, const std::string& pem,
                         std::vector<X509Ptr>* out) {
  BioPtr bio = MemoryBio(pem);
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) out->emplace_back(cert);
  if (out->empty()) return Status::InvalidArgument(what + " " + path + " holds no PEM certificate");
  return Status::OK();
}

// Writes `data` to dir/name + ".tmp", a new file of mode 0600, for a rename
// into place. A file left there (a crash) is removed first: written through,
// its mode (or, were it a link, its target) would hold the key.
Status WriteTemp(const std::string& dir, const std::string& name, const std::string& data) {
  const std::string tmp = dir + "/" + name + ".tmp";
  if (unlink(tmp.c_str()) != 0 && errno != ENOENT) return ErrnoStatus("remove " + tmp, errno);
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus("create " + tmp, errno);
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      close(fd);
      unlink(tmp.c_str());
      return ErrnoStatus("write " + tmp, err);
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0) return ErrnoStatus("close " + tmp, errno);
  return Status::OK();
}

Status RenameIntoPlace(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/" + name;
  if (rename((path + ".tmp").c_str(), path.c_str()) != 0) return ErrnoStatus("rename " + path + ".tmp", errno);
  return Status::OK();
}

}  // namespace

TlsReloader::TlsReloader(TlsFiles source, std::string private_dir)
    : source_(std::move(source)), dir_(std::move(private_dir)) {
  served_.cert = dir_ + "/cert.pem";
  served_.key = dir_ + "/key.pem";
  if (!source_.client_ca.empty()) served_.client_ca = dir_ + "/client-ca.pem";
}

Result<std::unique_ptr<TlsReloader>> TlsReloader::Create(const TlsFiles& source, std::string private_dir) {
  if (mkdir(private_dir.c_str(), 0700) != 0 && errno != EEXIST) return ErrnoStatus("mkdir " + private_dir, errno);
  if (chmod(private_dir.c_str(), 0700) != 0) return ErrnoStatus("chmod " + private_dir, errno);
  auto reloader = std::unique_ptr<TlsReloader>(new TlsReloader(source, std::move(private_dir)));
  auto loaded = reloader->Reload();
  if (!loaded.ok()) return loaded.status();
  return reloader;
}

Result<std::string> TlsReloader::Reload() {
  std::string cert_pem, key_pem, ca_pem;
  STRATA_RETURN_IF_ERROR(ReadFile("the certificate", source_.cert, &cert_pem));
  STRATA_RETURN_IF_ERROR(ReadFile("the private key", source_.key, &key_pem));
  if (!source_.client_ca.empty()) STRATA_RETURN_IF_ERROR(ReadFile("the client CA", source_.client_ca, &ca_pem));

  std::vector<X509Ptr> chain;
  STRATA_RETURN_IF_ERROR(ParseCertificates("the certificate", source_.cert, cert_pem, &chain));
  BioPtr key_bio = MemoryBio(key_pem);
  KeyPtr key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (!key) return Status::InvalidArgument("the private key " + source_.key + " is not a PEM private key");
  if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
    return Status::InvalidArgument("the private key " + source_.key + " does not belong to the certificate " +
                                   source_.cert);
  }
  if (X509_cmp_current_time(X509_get0_notAfter(chain.front().get())) <= 0) {
    return Status::InvalidArgument("the certificate " + source_.cert + " expired (" + NotAfter(chain.front().get()) +
                                   ")");
  }
  std::vector<X509Ptr> cas;
  if (!source_.client_ca.empty()) {
    STRATA_RETURN_IF_ERROR(ParseCertificates("the client CA", source_.client_ca, ca_pem, &cas));
  }
  // All written first, then renamed one right after another: the watcher
  // reads the files whenever it runs, and the renames leave it the smallest
  // window in which to see a new certificate beside the old key.
  if (!cas.empty()) STRATA_RETURN_IF_ERROR(WriteTemp(dir_, "client-ca.pem", ca_pem));
  STRATA_RETURN_IF_ERROR(WriteTemp(dir_, "cert.pem", cert_pem));
  STRATA_RETURN_IF_ERROR(WriteTemp(dir_, "key.pem", key_pem));
  if (!cas.empty()) STRATA_RETURN_IF_ERROR(RenameIntoPlace(dir_, "client-ca.pem"));
  STRATA_RETURN_IF_ERROR(RenameIntoPlace(dir_, "cert.pem"));
  STRATA_RETURN_IF_ERROR(RenameIntoPlace(dir_, "key.pem"));
  std::string what = "certificate " + Subject(chain.front().get()) + " (expires " + NotAfter(chain.front().get()) +
                     ") from " + source_.cert;
  if (!cas.empty()) what += "; client CA " + source_.client_ca + " (" + std::to_string(cas.size()) + " certificates)";
  return what;
}

}  // namespace strata
