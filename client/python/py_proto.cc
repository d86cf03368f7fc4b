// Protobuf messages to and from Python dicts, by reflection, so the admin
// replies (list, describe, status, ingest) reach Python with every field the
// server sends, including fields added after this module was written.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>

#include <string>

#include "client/python/py_common.h"

namespace strata::python {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

py::object Scalar(const Message& m, const FieldDescriptor* f) {
  const Reflection* r = m.GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: return py::int_(r->GetInt32(m, f));
    case FieldDescriptor::CPPTYPE_INT64: return py::int_(r->GetInt64(m, f));
    case FieldDescriptor::CPPTYPE_UINT32: return py::int_(r->GetUInt32(m, f));
    case FieldDescriptor::CPPTYPE_UINT64: return py::int_(r->GetUInt64(m, f));
    case FieldDescriptor::CPPTYPE_DOUBLE: return py::float_(r->GetDouble(m, f));
    case FieldDescriptor::CPPTYPE_FLOAT: return py::float_(r->GetFloat(m, f));
    case FieldDescriptor::CPPTYPE_BOOL: return py::bool_(r->GetBool(m, f));
    case FieldDescriptor::CPPTYPE_ENUM: return py::str(r->GetEnum(m, f)->name());
    case FieldDescriptor::CPPTYPE_STRING:
      if (f->type() == FieldDescriptor::TYPE_BYTES) return py::bytes(r->GetString(m, f));
      return py::str(r->GetString(m, f));
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return r->HasField(m, f) ? py::object(ToDict(r->GetMessage(m, f))) : py::object(py::none());
  }
  return py::none();
}

py::object RepeatedScalar(const Message& m, const FieldDescriptor* f, int i) {
  const Reflection* r = m.GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: return py::int_(r->GetRepeatedInt32(m, f, i));
    case FieldDescriptor::CPPTYPE_INT64: return py::int_(r->GetRepeatedInt64(m, f, i));
    case FieldDescriptor::CPPTYPE_UINT32: return py::int_(r->GetRepeatedUInt32(m, f, i));
    case FieldDescriptor::CPPTYPE_UINT64: return py::int_(r->GetRepeatedUInt64(m, f, i));
    case FieldDescriptor::CPPTYPE_DOUBLE: return py::float_(r->GetRepeatedDouble(m, f, i));
    case FieldDescriptor::CPPTYPE_FLOAT: return py::float_(r->GetRepeatedFloat(m, f, i));
    case FieldDescriptor::CPPTYPE_BOOL: return py::bool_(r->GetRepeatedBool(m, f, i));
    case FieldDescriptor::CPPTYPE_ENUM: return py::str(r->GetRepeatedEnum(m, f, i)->name());
    case FieldDescriptor::CPPTYPE_STRING:
      if (f->type() == FieldDescriptor::TYPE_BYTES) return py::bytes(r->GetRepeatedString(m, f, i));
      return py::str(r->GetRepeatedString(m, f, i));
    case FieldDescriptor::CPPTYPE_MESSAGE: return ToDict(r->GetRepeatedMessage(m, f, i));
  }
  return py::none();
}

void SetScalar(Message* m, const FieldDescriptor* f, const py::handle& v) {
  const Reflection* r = m->GetReflection();
  const bool repeated = f->is_repeated();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      repeated ? r->AddInt32(m, f, v.cast<int32_t>()) : r->SetInt32(m, f, v.cast<int32_t>());
      return;
    case FieldDescriptor::CPPTYPE_INT64:
      repeated ? r->AddInt64(m, f, v.cast<int64_t>()) : r->SetInt64(m, f, v.cast<int64_t>());
      return;
    case FieldDescriptor::CPPTYPE_UINT32:
      repeated ? r->AddUInt32(m, f, v.cast<uint32_t>()) : r->SetUInt32(m, f, v.cast<uint32_t>());
      return;
    case FieldDescriptor::CPPTYPE_UINT64:
      repeated ? r->AddUInt64(m, f, v.cast<uint64_t>()) : r->SetUInt64(m, f, v.cast<uint64_t>());
      return;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      repeated ? r->AddDouble(m, f, v.cast<double>()) : r->SetDouble(m, f, v.cast<double>());
      return;
    case FieldDescriptor::CPPTYPE_FLOAT:
      repeated ? r->AddFloat(m, f, v.cast<float>()) : r->SetFloat(m, f, v.cast<float>());
      return;
    case FieldDescriptor::CPPTYPE_BOOL:
      repeated ? r->AddBool(m, f, v.cast<bool>()) : r->SetBool(m, f, v.cast<bool>());
      return;
    case FieldDescriptor::CPPTYPE_ENUM: {
      const google::protobuf::EnumValueDescriptor* e = py::isinstance<py::str>(v)
                                                           ? f->enum_type()->FindValueByName(v.cast<std::string>())
                                                           : f->enum_type()->FindValueByNumber(v.cast<int>());
      if (e == nullptr) {
        throw py::value_error("bad value " + py::repr(v).cast<std::string>() + " for " + f->full_name());
      }
      repeated ? r->AddEnum(m, f, e) : r->SetEnum(m, f, e);
      return;
    }
    case FieldDescriptor::CPPTYPE_STRING:
      repeated ? r->AddString(m, f, v.cast<std::string>()) : r->SetString(m, f, v.cast<std::string>());
      return;
    case FieldDescriptor::CPPTYPE_MESSAGE:
      if (!py::isinstance<py::dict>(v)) throw py::value_error(f->full_name() + " takes a dict");
      FromDict(v.cast<py::dict>(), repeated ? r->AddMessage(m, f) : r->MutableMessage(m, f));
      return;
  }
}

}  // namespace

py::dict ToDict(const Message& message) {
  py::dict out;
  const google::protobuf::Descriptor* d = message.GetDescriptor();
  const Reflection* r = message.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->is_map()) {
      py::dict map;
      for (int k = 0; k < r->FieldSize(message, f); ++k) {
        const Message& entry = r->GetRepeatedMessage(message, f, k);
        const google::protobuf::Descriptor* e = entry.GetDescriptor();
        map[Scalar(entry, e->map_key())] = Scalar(entry, e->map_value());
      }
      out[py::str(f->name())] = map;
    } else if (f->is_repeated()) {
      py::list list;
      for (int k = 0; k < r->FieldSize(message, f); ++k) list.append(RepeatedScalar(message, f, k));
      out[py::str(f->name())] = list;
    } else {
      out[py::str(f->name())] = Scalar(message, f);
    }
  }
  return out;
}

void FromDict(const py::dict& fields, Message* message) {
  const google::protobuf::Descriptor* d = message->GetDescriptor();
  for (const auto& [key, value] : fields) {
    const std::string name = py::str(key);
    const FieldDescriptor* f = d->FindFieldByName(name);
    if (f == nullptr) throw py::value_error(d->name() + " has no field '" + name + "'");
    if (value.is_none()) continue;
    try {
      if (f->is_map()) {
        const google::protobuf::Descriptor* e = f->message_type();
        for (const auto& [k, v] : value.cast<py::dict>()) {
          Message* entry = message->GetReflection()->AddMessage(message, f);
          SetScalar(entry, e->map_key(), k);
          SetScalar(entry, e->map_value(), v);
        }
      } else if (f->is_repeated()) {
        for (const auto& item : value) SetScalar(message, f, item);
      } else {
        SetScalar(message, f, value);
      }
    } catch (const py::cast_error&) {
      throw py::value_error("bad value " + py::repr(value).cast<std::string>() + " for " + f->full_name());
    }
  }
}

}  // namespace strata::python
