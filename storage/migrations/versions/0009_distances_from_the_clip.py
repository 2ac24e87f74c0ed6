"""distances measured from the clip's position (issue [O]: the dataset's truth is the truth)

Predictions stored before this revision had their distance error measured from their result
record's stated true position. For every prediction linked to a clip with a position whose
record states another true position (or none), the distance is measured again from the clip's
position, as the importers now store it. Data only; no schema change.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27 04:45:00
"""

import math

from alembic import op
import sqlalchemy as sa


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

# A frozen copy of the distance rule of workbench/metrics/distance.py as of this revision
# (storage never imports the domain; a migration gives the same result whatever the code becomes).
_REFUSALS = frozenset({"0", "-1", "", "null", "none", "n/a", "na", "unknown", "unable", "cannot", "0.0"})
_REFUSAL_KM = 10_000.0
_SAME_POSITION_DEG = 1e-7


def _refused(value):
    return value is None or str(value).strip().lower() in _REFUSALS


def _number(value):
    if value is None:
        return None
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _distance_km(geodesic, true_lat, true_lon, pred_lat, pred_lon):
    if _refused(pred_lat) or _refused(pred_lon):
        return _REFUSAL_KM
    coords = [_number(v) for v in (true_lat, true_lon, pred_lat, pred_lon)]
    if any(c is None for c in coords) or abs(coords[0]) > 90 or abs(coords[2]) > 90:
        return None
    return geodesic.Inverse(*coords, geodesic.DISTANCE)["s12"] / 1000.0


def upgrade() -> None:
    from geographiclib.geodesic import Geodesic

    bind = op.get_bind()
    prediction = sa.table(
        'prediction',
        sa.column('id', sa.Integer), sa.column('clip_id', sa.Integer),
        sa.column('true_latitude', sa.Float), sa.column('true_longitude', sa.Float),
        sa.column('predicted_latitude', sa.String), sa.column('predicted_longitude', sa.String),
        sa.column('distance_error_km', sa.Float),
    )
    clip = sa.table('clip', sa.column('id', sa.Integer), sa.column('latitude', sa.Float),
                    sa.column('longitude', sa.Float))
    rows = bind.execute(
        sa.select(prediction.c.id, clip.c.latitude, clip.c.longitude, prediction.c.predicted_latitude,
                  prediction.c.predicted_longitude)
        .select_from(prediction.join(clip, clip.c.id == prediction.c.clip_id))
        .where(clip.c.latitude.is_not(None), clip.c.longitude.is_not(None),
               sa.or_(prediction.c.true_latitude.is_(None), prediction.c.true_longitude.is_(None),
                      sa.func.abs(prediction.c.true_latitude - clip.c.latitude) > _SAME_POSITION_DEG,
                      sa.func.abs(prediction.c.true_longitude - clip.c.longitude) > _SAME_POSITION_DEG))
    ).all()
    if rows:
        update = (sa.update(prediction).where(prediction.c.id == sa.bindparam('row_id'))
                  .values(distance_error_km=sa.bindparam('km')))
        bind.execute(update, [{'row_id': row[0], 'km': _distance_km(Geodesic.WGS84, *row[1:])} for row in rows])


def downgrade() -> None:
    # The record-measured distances are not kept; a downgrade leaves the clip-measured ones.
    pass
