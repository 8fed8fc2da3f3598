#!/usr/bin/env bash
# A DDS-Security keystore laid out and made as SROS2 (`ros2 security create_keystore` +
# `create_enclave`) makes it, with openssl only:
#   KEYSTORE/public/ca.cert.pem           self-signed CA (ECDSA P-256), identity AND permissions CA
#   KEYSTORE/private/ca.key.pem
#   KEYSTORE/enclaves/governance.xml|.p7s governance, S/MIME-signed by the CA
#   KEYSTORE/enclaves/<enclave>/{identity_ca.cert.pem, permissions_ca.cert.pem, cert.pem, key.pem,
#                               governance.p7s, permissions.xml, permissions.p7s}
# The enclave folder is what fastdds_pubsub --security DIR takes (as rmw_fastrtps takes
# ROS_SECURITY_ENCLAVE).
#
# usage: make_sros2_keystore.sh KEYSTORE GOVERNANCE ENCLAVE...
#   GOVERNANCE  sros2        SROS2's default: discovery, liveliness and metadata ENCRYPT,
#                            rtps_protection SIGN, data ENCRYPT, join access control on,
#                            unauthenticated participants refused
#               payload-only only the user payload ENCRYPTed (data_protection_kind), everything
#                            else (discovery, liveliness, metadata, RTPS messages) in the clear
#   ENCLAVE     e.g. /talker: certificate subject CN=/talker, permitted to publish and subscribe
#               every topic of domain 0 (SROS2 grants per topic; one grant keeps this generic)
set -euo pipefail
KS=$1 GOV=$2
shift 2
[ $# -ge 1 ] || { echo "usage: $0 KEYSTORE sros2|payload-only ENCLAVE..." >&2; exit 2; }
command -v openssl >/dev/null || { echo "missing openssl (apt-get install openssl)" >&2; exit 1; }
case "$GOV" in
  sros2) DISC=ENCRYPT LIVE=ENCRYPT RTPS=SIGN META=ENCRYPT DATA=ENCRYPT ;;
  payload-only) DISC=NONE LIVE=NONE RTPS=NONE META=NONE DATA=ENCRYPT ;;
  *) echo "governance must be sros2 or payload-only, not '$GOV'" >&2; exit 2 ;;
esac
mkdir -p "$KS/public" "$KS/private" "$KS/enclaves"
CA_CERT=$KS/public/ca.cert.pem CA_KEY=$KS/private/ca.key.pem
openssl ecparam -name prime256v1 -genkey -noout -out "$CA_KEY"
openssl req -new -x509 -sha256 -key "$CA_KEY" -out "$CA_CERT" -days 3650 -subj "/CN=sros2testCA"

cat >"$KS/enclaves/governance.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_governance.xsd">
  <domain_access_rules>
    <domain_rule>
      <domains>
        <id_range>
          <min>0</min>
          <max>230</max>
        </id_range>
      </domains>
      <allow_unauthenticated_participants>false</allow_unauthenticated_participants>
      <enable_join_access_control>true</enable_join_access_control>
      <discovery_protection_kind>$DISC</discovery_protection_kind>
      <liveliness_protection_kind>$LIVE</liveliness_protection_kind>
      <rtps_protection_kind>$RTPS</rtps_protection_kind>
      <topic_access_rules>
        <topic_rule>
          <topic_expression>*</topic_expression>
          <enable_discovery_protection>true</enable_discovery_protection>
          <enable_liveliness_protection>true</enable_liveliness_protection>
          <enable_read_access_control>true</enable_read_access_control>
          <enable_write_access_control>true</enable_write_access_control>
          <metadata_protection_kind>$META</metadata_protection_kind>
          <data_protection_kind>$DATA</data_protection_kind>
        </topic_rule>
      </topic_access_rules>
    </domain_rule>
  </domain_access_rules>
</dds>
EOF
[ "$GOV" = payload-only ] && sed -i \
  -e 's|<enable_discovery_protection>true|<enable_discovery_protection>false|' \
  -e 's|<enable_liveliness_protection>true|<enable_liveliness_protection>false|' \
  "$KS/enclaves/governance.xml"
openssl smime -sign -text -in "$KS/enclaves/governance.xml" -out "$KS/enclaves/governance.p7s" \
  -signer "$CA_CERT" -inkey "$CA_KEY"

NOT_BEFORE=$(date -u +%Y-%m-%dT%H:%M:%S)
NOT_AFTER=$(date -u -d '+10 years' +%Y-%m-%dT%H:%M:%S)
for enclave in "$@"; do
  E=$KS/enclaves/${enclave#/}
  mkdir -p "$E"
  openssl ecparam -name prime256v1 -genkey -noout -out "$E/key.pem"
  openssl req -new -sha256 -key "$E/key.pem" -subj "/CN=${enclave//\//\\/}" -out "$E/req.pem"
  openssl x509 -req -sha256 -in "$E/req.pem" -CA "$CA_CERT" -CAkey "$CA_KEY" -CAcreateserial \
    -CAserial "$KS/private/ca.srl" -days 3650 -out "$E/cert.pem" 2>/dev/null
  rm -f "$E/req.pem"
  cp "$CA_CERT" "$E/identity_ca.cert.pem"
  cp "$CA_CERT" "$E/permissions_ca.cert.pem"
  cp "$KS/enclaves/governance.p7s" "$E/governance.p7s"
  cat >"$E/permissions.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_permissions.xsd">
  <permissions>
    <grant name="$enclave">
      <subject_name>CN=$enclave</subject_name>
      <validity>
        <not_before>$NOT_BEFORE</not_before>
        <not_after>$NOT_AFTER</not_after>
      </validity>
      <allow_rule>
        <domains>
          <id>0</id>
        </domains>
        <publish>
          <topics>
            <topic>*</topic>
          </topics>
        </publish>
        <subscribe>
          <topics>
            <topic>*</topic>
          </topics>
        </subscribe>
      </allow_rule>
      <default>DENY</default>
    </grant>
  </permissions>
</dds>
EOF
  openssl smime -sign -text -in "$E/permissions.xml" -out "$E/permissions.p7s" \
    -signer "$CA_CERT" -inkey "$CA_KEY"
done
