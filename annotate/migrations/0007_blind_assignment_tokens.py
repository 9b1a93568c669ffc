from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotate', '0006_skip_comment_extend'),
    ]

    operations = [
        migrations.AddField(
            model_name='assignment',
            name='blind',
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
