"""The Studio in a real browser: Debian's Chromium, headless, driven by selenium against the composed stack. A job's Web
View link from the SDK's answer follows the job to Completed and draws its MLflow metrics without reloading; the
compute page's node strip shows a node preempted; the pages say 404 and 401 themselves.

Screenshots go to $AMLEMU_SCREENSHOTS when it is set (README's come from `AMLEMU_SCREENSHOTS=docs/images`)."""

import base64
import hashlib
import os
import shutil
import uuid
from pathlib import Path

import pytest
from azure.ai.ml import load_job
from azure.ai.ml.entities import AmlCompute
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from typer.testing import CliRunner

from emulator.cli.main import app

pytestmark = pytest.mark.e2e
SAMPLES = Path(__file__).resolve().parents[2] / "sample_jobs"
ENDED = ("Completed", "Failed", "Canceled")
# Collects every status the job's page shows as the server pushes it (the live part is replaced, the page is not).
WATCH_STATUS = """
window.studioMarker = arguments[0];
window.seenStatuses = [document.getElementById("job-status").dataset.status];
new MutationObserver(function () {
  var shown = document.getElementById("job-status");
  if (shown && window.seenStatuses[window.seenStatuses.length - 1] !== shown.dataset.status) {
    window.seenStatuses.push(shown.dataset.status);
  }
}).observe(document.getElementById("live"), {childList: true, subtree: true});
"""


def _key_pin(certificate: Path) -> str:
    key = x509.load_pem_x509_certificate(certificate.read_bytes()).public_key()
    return base64.b64encode(hashlib.sha256(key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo))
                            .digest()).decode()


@pytest.fixture(scope="module")
def browser(stack):
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    # The throwaway profile holds no CA of ours: it trusts the stack's own server key, and nothing else untrusted.
    pin = _key_pin(stack.ca_file.parent / "server.crt")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900",
                     f"--ignore-certificate-errors-spki-list={pin}"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(
        executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver"))
    yield driver
    driver.quit()


def _shot(browser, name: str) -> None:
    folder = os.environ.get("AMLEMU_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        assert browser.save_screenshot(str(Path(folder) / f"studio-{name}.png"))


def _open(browser, url, tries: int = 3) -> None:
    """Loads a page, again when Chromium dropped the load because the machine's network changed (the other tests'
    Docker networks come and go; a person would press Reload). `url` may be a function giving a fresh one each time."""
    for _ in range(tries):
        browser.get(url() if callable(url) else url)
        error = browser.execute_script("return typeof loadTimeDataRaw === 'undefined' ? '' : loadTimeDataRaw.errorCode")
        if error != "ERR_NETWORK_CHANGED":
            return
    pytest.fail(f"Chromium said {error} {tries} times")


def _log_in(browser, page: str, lands_on: str) -> None:
    """`amlemu studio <page> --print`: the one-time login link the CLI asks for with the management token, opened in
    the browser, which lands on the page with a session."""
    def link() -> str:
        result = CliRunner().invoke(app, ["studio", page, "--print"])
        assert result.exit_code == 0, result.output
        return result.stdout.strip()
    _open(browser, link)  # a fresh link for a load tried again: each is good once
    WebDriverWait(browser, 10).until(lambda d: d.current_url.endswith(lands_on), message=f"to land on {lands_on}")


def _data(browser, selector: str, attribute: str = "state") -> list[str]:
    """The elements' data attribute, read in one script: the live stream may swap them between two calls."""
    return browser.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(e => e.dataset[arguments[1]])", selector, attribute)


def _data_state(browser, selector: str) -> list[str]:
    return _data(browser, selector)


@pytest.mark.timeout(900)  # a first run builds the sklearn environment
def test_a_jobs_web_view_follows_it_to_completed_and_draws_its_metrics(ml_client, browser):
    job = ml_client.jobs.create_or_update(load_job(SAMPLES / "mlflow-train" / "job.yml"))
    _open(browser, job.studio_url)  # the SDK's own answer: a signed link, no session needed
    # read in one script, as after: the live stream swaps the status element as the job moves on
    assert not set(_data(browser, "#job-status", "status")) & set(ENDED)
    browser.execute_script(WATCH_STATUS, "loaded once")
    WebDriverWait(browser, 900, poll_frequency=1).until(
        lambda d: set(_data(d, "#job-status", "status")) & set(ENDED),
        message="the page to show the job ended (a first run builds the sklearn environment)")
    log = browser.execute_script("return document.getElementById('log').textContent")
    assert _data(browser, "#job-status", "status") == ["Completed"], log[-3000:]
    seen = browser.execute_script("return window.seenStatuses")
    assert "Running" in seen and seen[-1] == "Completed", seen
    # test_accuracy is logged at steps 0..4: a line of five points, drawn on the server as SVG
    chart = WebDriverWait(browser, 30).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, 'figure[data-metric="test_accuracy"] svg.chart polyline'),
        message="the test_accuracy chart")[0]
    assert len(chart.get_attribute("points").split()) == 5
    assert browser.find_elements(By.CSS_SELECTOR, 'figure[data-metric="accuracy"] svg.chart')
    assert "epochs" in browser.find_element(By.TAG_NAME, "main").text  # its MLflow parameters
    assert browser.execute_script("return window.studioMarker") == "loaded once"  # never reloaded
    assert int(browser.execute_script("return window.amlemuStudio.updates")) >= len(seen) - 1
    _shot(browser, "job")


@pytest.fixture
def spot_cluster(ml_client):
    name = f"spot-{uuid.uuid4().hex[:6]}"
    ml_client.compute.begin_create_or_update(AmlCompute(name=name, size="Standard_DS3_v2", tier="low_priority",
                                                        min_instances=0, max_instances=1,
                                                        idle_time_before_scale_down=5)).result()
    yield name
    ml_client.compute.begin_delete(name).result()


def test_the_compute_pages_node_strip_shows_a_preemption_live(ml_client, rest, workspace_path, browser, spot_cluster):
    job = load_job(SAMPLES / "checkpointing" / "job.yml", params_override=[
        {"compute": f"azureml:{spot_cluster}"}, {"inputs.steps": 400}, {"inputs.step_seconds": 0.5},
        {"experiment_name": "studio-preemption"}])
    name = ml_client.jobs.create_or_update(job).name
    try:
        _log_in(browser, "compute", f"/studio{workspace_path}/computes")
        browser.execute_script("window.studioMarker = arguments[0]", "loaded once")
        strip = f'section[data-compute="{spot_cluster}"] .strip .node'
        WebDriverWait(browser, 180, poll_frequency=0.5).until(lambda d: _data_state(d, strip) == ["running"],
                                                               message="a running node on the strip")
        (node,) = _data(browser, strip, "node")
        preempted = rest.post(f"/_emulator{workspace_path}/computes/{spot_cluster}/preempt", json={"nodeId": node})
        assert preempted.status_code == 202, preempted.text
        WebDriverWait(browser, 60, poll_frequency=0.3).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, f'{strip}[data-node="{node}"][data-state="preempted"]'),
            message=f"{node} to show preempted")
        assert browser.execute_script("return window.studioMarker") == "loaded once"  # never reloaded
        _shot(browser, "compute")
        _open(browser, f"{browser.current_url}/{spot_cluster}")  # the cluster's own page, its strip drawn by its script
        WebDriverWait(browser, 30, poll_frequency=0.3).until(lambda d: "preempted" in _data_state(d, strip),
                                                             message=f"{node} preempted on the cluster's page")
        assert browser.find_elements(By.CSS_SELECTOR, "p.cost[data-dollars]")  # what its nodes cost so far
        _open(browser, f"{browser.current_url.rsplit('/computes/', 1)[0]}/timeline?subject={spot_cluster}")
        wanted = {"node.added", "node.up", "node.notice", "node.preempted"}
        try:  # read in one script, again until all are there: the live stream re-renders the table as events come
            WebDriverWait(browser, 30, poll_frequency=0.5).until(
                lambda d: wanted <= set(_data(d, "tr[data-kind]", "kind")))
        except TimeoutException:
            pytest.fail(f"the timeline lacks {wanted}: {browser.current_url}\n{browser.page_source[-3000:]}")
        kinds = _data(browser, "tr[data-kind]", "kind")
        assert kinds.count("node.preempted") == 1  # newest first: the preemption after its notice, after the node came up
        assert kinds.index("node.preempted") < kinds.index("node.notice") < kinds.index("node.up")
        _shot(browser, "timeline")
    finally:
        ml_client.jobs.begin_cancel(name).result()


def test_the_pages_list_jobs_and_answer_unknown_ids_and_strangers_themselves(workspace_path, browser):
    _log_in(browser, "jobs", f"/studio{workspace_path}/jobs")
    assert browser.find_elements(By.CSS_SELECTOR, "table.jobs tr[data-job]")  # the earlier tests' jobs
    _shot(browser, "jobs")
    _open(browser, browser.current_url.split("/studio")[0] + "/studio")
    assert browser.find_elements(By.LINK_TEXT, os.environ["AMLEMU_WORKSPACE"])
    _shot(browser, "workspaces")
    _open(browser, browser.current_url + f"{workspace_path}/jobs/no-such-job")
    assert browser.find_element(By.CSS_SELECTOR, ".error").get_attribute("data-status") == "404"
    browser.delete_all_cookies()  # a stranger: no session, no signed link
    _open(browser, browser.current_url.split("/studio")[0] + f"/studio{workspace_path}/computes")
    assert browser.find_element(By.CSS_SELECTOR, ".error").get_attribute("data-status") == "401"
    assert "amlemu studio" in browser.find_element(By.TAG_NAME, "main").text
