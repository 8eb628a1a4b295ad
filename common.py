import os, sys, json, time, logging
os.environ.setdefault("ARM_CLOUD_METADATA_URL", "https://localhost:8443/metadata/endpoints?api-version=2019-05-01")
os.environ["REQUESTS_CA_BUNDLE"] = "/tmp/sdkresearch/cert.pem"
from azure.core.credentials import AccessToken
class FakeCred:
    def get_token(self, *scopes, **kw):
        return AccessToken("faketoken", int(time.time()) + 3600)
    def get_token_info(self, *scopes, options=None):
        from azure.core.credentials import AccessTokenInfo
        return AccessTokenInfo("faketoken", int(time.time()) + 3600)
from azure.ai.ml import MLClient
SUB="00000000-0000-0000-0000-000000000001"; RG="rg1"
def client(ws=None):
    return MLClient(FakeCred(), SUB, RG, ws, enable_telemetry=False)
def scen(d):
    json.dump(d, open("/tmp/sdkresearch/scenario.json","w"))
def clearlog():
    open("/tmp/sdkresearch/requests.log","w").close()
def showlog():
    for l in open("/tmp/sdkresearch/requests.log"):
        d=json.loads(l)
        if "m" in d:
            b = json.dumps(d["body"]) if d["body"] is not None else ""
            print(">>", d["m"], d["path"], {k:v for k,v in d["q"].items()}, (b[:300]+"...") if len(b)>300 else b)
        else:
            b = json.dumps(d["body"]) if d["body"] is not None else ""
            print("   <<", d["resp"], d["hdrs"], (b[:150]+"...") if len(b)>150 else b)
